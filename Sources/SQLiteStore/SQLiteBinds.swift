import CSQLite

// One concept, long on purpose (590 lines, over the 500 a file keeps to): binds by position for
// 1 to 24 values, each overload the same lines, written out rather than as one parameter pack.
// The widest statements bind 21 values (an archived snapshot) and 17 (a stored sample), so a
// new field still finds its overload here; nothing else belongs in this file. Swift 6.3 binds a
// pack's values through witness tables, copying each optional through its metadata, which cost
// an ingest about 1,700 instructions a sample (4%) under callgrind; generic overloads are
// specialized and inlined down to SQLite's C calls.
extension SQLiteStatement {
    /// Binds the values to parameters 1, 2, ... in order, each as its type says (`SQLiteBindable`)
    /// a statement with another number of parameters fails its next `step`, so none runs with a
    /// value left out or left over. Nothing is numbered by hand.
    @inlinable
    public func bind<V1: SQLiteBindable>(_ v1: V1) {
        v1.bind(to: self, at: 1)
        expectParameters(1)
    }

    /// Binds 2 values to parameters 1 to 2 (see the one-value `bind`).
    @inlinable
    public func bind<V1: SQLiteBindable, V2: SQLiteBindable>(_ v1: V1, _ v2: V2) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        expectParameters(2)
    }

    /// Binds 3 values to parameters 1 to 3 (see the one-value `bind`).
    @inlinable
    public func bind<V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable>(_ v1: V1, _ v2: V2, _ v3: V3) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        expectParameters(3)
    }

    /// Binds 4 values to parameters 1 to 4 (see the one-value `bind`).
    @inlinable
    public func bind<V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable>(
        _ v1: V1, _ v2: V2, _ v3: V3,
        _ v4: V4
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        expectParameters(4)
    }

    /// Binds 5 values to parameters 1 to 5 (see the one-value `bind`).
    @inlinable
    public func bind<V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable>(
        _ v1: V1, _ v2: V2,
        _ v3: V3, _ v4: V4, _ v5: V5
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        expectParameters(5)
    }

    /// Binds 6 values to parameters 1 to 6 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable,
        V6: SQLiteBindable
    >(_ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        expectParameters(6)
    }

    /// Binds 7 values to parameters 1 to 7 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable
    >(_ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        expectParameters(7)
    }

    /// Binds 8 values to parameters 1 to 8 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable
    >(_ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        expectParameters(8)
    }

    /// Binds 9 values to parameters 1 to 9 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7,
        _ v8: V8, _ v9: V9
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        expectParameters(9)
    }

    /// Binds 10 values to parameters 1 to 10 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5,
        _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        expectParameters(10)
    }

    /// Binds 11 values to parameters 1 to 11 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3,
        _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        expectParameters(11)
    }

    /// Binds 12 values to parameters 1 to 12 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable
    >(
        _ v1: V1,
        _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        expectParameters(12)
    }

    /// Binds 13 values to parameters 1 to 13 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10,
        _ v11: V11, _ v12: V12, _ v13: V13
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        expectParameters(13)
    }

    /// Binds 14 values to parameters 1 to 14 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9,
        _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        expectParameters(14)
    }

    /// Binds 15 values to parameters 1 to 15 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7,
        _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14, _ v15: V15
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        expectParameters(15)
    }

    /// Binds 16 values to parameters 1 to 16 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4,
        _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14, _ v15: V15,
        _ v16: V16
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        expectParameters(16)
    }

    /// Binds 17 values to parameters 1 to 17 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2,
        _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14,
        _ v15: V15, _ v16: V16, _ v17: V17
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        expectParameters(17)
    }

    /// Binds 18 values to parameters 1 to 18 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12,
        _ v13: V13, _ v14: V14, _ v15: V15, _ v16: V16, _ v17: V17, _ v18: V18
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        expectParameters(18)
    }

    /// Binds 19 values to parameters 1 to 19 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable,
        V19: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10,
        _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14, _ v15: V15, _ v16: V16, _ v17: V17, _ v18: V18, _ v19: V19
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        v19.bind(to: self, at: 19)
        expectParameters(19)
    }

    /// Binds 20 values to parameters 1 to 20 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable,
        V19: SQLiteBindable, V20: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9,
        _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14, _ v15: V15, _ v16: V16, _ v17: V17, _ v18: V18, _ v19: V19,
        _ v20: V20
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        v19.bind(to: self, at: 19)
        v20.bind(to: self, at: 20)
        expectParameters(20)
    }

    /// Binds 21 values to parameters 1 to 21 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable,
        V19: SQLiteBindable, V20: SQLiteBindable, V21: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7,
        _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14, _ v15: V15, _ v16: V16, _ v17: V17, _ v18: V18,
        _ v19: V19, _ v20: V20, _ v21: V21
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        v19.bind(to: self, at: 19)
        v20.bind(to: self, at: 20)
        v21.bind(to: self, at: 21)
        expectParameters(21)
    }

    /// Binds 22 values to parameters 1 to 22 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable,
        V19: SQLiteBindable, V20: SQLiteBindable, V21: SQLiteBindable, V22: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4,
        _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14, _ v15: V15,
        _ v16: V16, _ v17: V17, _ v18: V18, _ v19: V19, _ v20: V20, _ v21: V21, _ v22: V22
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        v19.bind(to: self, at: 19)
        v20.bind(to: self, at: 20)
        v21.bind(to: self, at: 21)
        v22.bind(to: self, at: 22)
        expectParameters(22)
    }

    /// Binds 23 values to parameters 1 to 23 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable,
        V19: SQLiteBindable, V20: SQLiteBindable, V21: SQLiteBindable, V22: SQLiteBindable, V23: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2,
        _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12, _ v13: V13, _ v14: V14,
        _ v15: V15, _ v16: V16, _ v17: V17, _ v18: V18, _ v19: V19, _ v20: V20, _ v21: V21, _ v22: V22, _ v23: V23
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        v19.bind(to: self, at: 19)
        v20.bind(to: self, at: 20)
        v21.bind(to: self, at: 21)
        v22.bind(to: self, at: 22)
        v23.bind(to: self, at: 23)
        expectParameters(23)
    }

    /// Binds 24 values to parameters 1 to 24 (see the one-value `bind`).
    @inlinable
    public func bind<
        V1: SQLiteBindable, V2: SQLiteBindable, V3: SQLiteBindable, V4: SQLiteBindable, V5: SQLiteBindable, V6: SQLiteBindable,
        V7: SQLiteBindable, V8: SQLiteBindable, V9: SQLiteBindable, V10: SQLiteBindable, V11: SQLiteBindable, V12: SQLiteBindable,
        V13: SQLiteBindable, V14: SQLiteBindable, V15: SQLiteBindable, V16: SQLiteBindable, V17: SQLiteBindable, V18: SQLiteBindable,
        V19: SQLiteBindable, V20: SQLiteBindable, V21: SQLiteBindable, V22: SQLiteBindable, V23: SQLiteBindable, V24: SQLiteBindable
    >(
        _ v1: V1, _ v2: V2, _ v3: V3, _ v4: V4, _ v5: V5, _ v6: V6, _ v7: V7, _ v8: V8, _ v9: V9, _ v10: V10, _ v11: V11, _ v12: V12,
        _ v13: V13, _ v14: V14, _ v15: V15, _ v16: V16, _ v17: V17, _ v18: V18, _ v19: V19, _ v20: V20, _ v21: V21, _ v22: V22, _ v23: V23,
        _ v24: V24
    ) {
        v1.bind(to: self, at: 1)
        v2.bind(to: self, at: 2)
        v3.bind(to: self, at: 3)
        v4.bind(to: self, at: 4)
        v5.bind(to: self, at: 5)
        v6.bind(to: self, at: 6)
        v7.bind(to: self, at: 7)
        v8.bind(to: self, at: 8)
        v9.bind(to: self, at: 9)
        v10.bind(to: self, at: 10)
        v11.bind(to: self, at: 11)
        v12.bind(to: self, at: 12)
        v13.bind(to: self, at: 13)
        v14.bind(to: self, at: 14)
        v15.bind(to: self, at: 15)
        v16.bind(to: self, at: 16)
        v17.bind(to: self, at: 17)
        v18.bind(to: self, at: 18)
        v19.bind(to: self, at: 19)
        v20.bind(to: self, at: 20)
        v21.bind(to: self, at: 21)
        v22.bind(to: self, at: 22)
        v23.bind(to: self, at: 23)
        v24.bind(to: self, at: 24)
        expectParameters(24)
    }
}
