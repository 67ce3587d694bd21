# A ClickHouse server as an ordinary process, for the benches and the soak. Sourced, not run.
#
#   vitals_clickhouse_config DIR HTTP_PORT TCP_PORT [XML]  writes DIR/config.xml and DIR/users.xml
#                                                          (XML: more elements, a <remote_servers>)
#   vitals_clickhouse_start DIR HTTP_PORT [NAME]           starts clickhouse-server on DIR's config
#                                                          and waits until it answers /ping; sets
#                                                          vitals_clickhouse_pid (stops it and exits
#                                                          2 when it does not answer within 30 s)
# Its data, logs and temporary files stay in DIR; it listens on 127.0.0.1 only, as the user
# default without a password.

vitals_clickhouse_config() {   # DIR HTTP_PORT TCP_PORT [XML]
    local dir=$1
    mkdir -p "$dir"
    cat >"$dir/users.xml" <<XML
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
    cat >"$dir/config.xml" <<XML
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/error.log</errorlog></logger>
  <http_port>$2</http_port>
  <tcp_port>$3</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>536870912</mark_cache_size>
  ${4:-}
</yandex>
XML
}

vitals_clickhouse_start() {   # DIR HTTP_PORT [NAME]
    local i
    "$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)" --config-file="$1/config.xml" >/dev/null 2>&1 &
    vitals_clickhouse_pid=$!
    for ((i = 0; i < 300; i++)); do
        [[ $(curl -s "http://127.0.0.1:$2/ping" 2>/dev/null) == Ok. ]] && return 0
        kill -0 "$vitals_clickhouse_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$vitals_clickhouse_pid" 2>/dev/null
    vitals_say "clickhouse-server${3:+ ($3)} did not start; see $1/error.log"
    exit 2
}
