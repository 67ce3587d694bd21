#!/usr/bin/env python3
"""Writes a real-shaped Apple Health export.xml of N top-level Records (for scripts/bench/snapshot-delta).

The shape follows real exports: a version 14 internal DTD with its ATTLIST lines, Records with
a device attribute that embeds a memory address, MetadataEntry children, heart-rate variability
lists, blood-pressure Correlations (their Records repeated at top level), Workouts with events
and routes, ActivitySummaries, and dates whose UTC offset changes with daylight saving time.
Values are invented; the sequence is deterministic (seeded).
"""
import calendar
import random
import sys
import time

DTD = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 14 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ELEMENT ExportDate EMPTY>
<!ATTLIST ExportDate
  value CDATA #REQUIRED
>
<!ELEMENT Me EMPTY>
<!ATTLIST Me
  HKCharacteristicTypeIdentifierDateOfBirth                   CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBiologicalSex                 CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBloodType                     CDATA #REQUIRED
  HKCharacteristicTypeIdentifierFitzpatrickSkinType           CDATA #REQUIRED
  HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse   CDATA #REQUIRED
>
<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
<!ATTLIST Record
  type          CDATA #REQUIRED
  unit          CDATA #IMPLIED
  value         CDATA #IMPLIED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
<!ELEMENT Correlation ((MetadataEntry|Record)*)>
<!ATTLIST Correlation
  type          CDATA #REQUIRED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!ELEMENT Workout ((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)>
<!ATTLIST Workout
  workoutActivityType   CDATA #REQUIRED
  duration              CDATA #IMPLIED
  durationUnit          CDATA #IMPLIED
  totalDistance         CDATA #IMPLIED
  totalDistanceUnit     CDATA #IMPLIED
  totalEnergyBurned     CDATA #IMPLIED
  totalEnergyBurnedUnit CDATA #IMPLIED
  sourceName            CDATA #REQUIRED
  sourceVersion         CDATA #IMPLIED
  device                CDATA #IMPLIED
  creationDate          CDATA #IMPLIED
  startDate             CDATA #REQUIRED
  endDate               CDATA #REQUIRED
>
<!ELEMENT WorkoutEvent ((MetadataEntry)*)>
<!ATTLIST WorkoutEvent
  type                 CDATA #REQUIRED
  date                 CDATA #REQUIRED
  duration             CDATA #IMPLIED
  durationUnit         CDATA #IMPLIED
>
<!ELEMENT WorkoutStatistics EMPTY>
<!ATTLIST WorkoutStatistics
  type                 CDATA #REQUIRED
  startDate            CDATA #REQUIRED
  endDate              CDATA #REQUIRED
  average              CDATA #IMPLIED
  minimum              CDATA #IMPLIED
  maximum              CDATA #IMPLIED
  sum                  CDATA #IMPLIED
  unit                 CDATA #IMPLIED
>
<!ELEMENT WorkoutRoute ((MetadataEntry|FileReference)*)>
<!ATTLIST WorkoutRoute
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!ELEMENT FileReference EMPTY>
<!ATTLIST FileReference
  path CDATA #REQUIRED
>
<!ELEMENT ActivitySummary EMPTY>
<!ATTLIST ActivitySummary
  dateComponents           CDATA #IMPLIED
  activeEnergyBurned       CDATA #IMPLIED
  activeEnergyBurnedGoal   CDATA #IMPLIED
  activeEnergyBurnedUnit   CDATA #IMPLIED
  appleMoveTime            CDATA #IMPLIED
  appleMoveTimeGoal        CDATA #IMPLIED
  appleExerciseTime        CDATA #IMPLIED
  appleExerciseTimeGoal    CDATA #IMPLIED
  appleStandHours          CDATA #IMPLIED
  appleStandHoursGoal      CDATA #IMPLIED
>
<!ELEMENT MetadataEntry EMPTY>
<!ATTLIST MetadataEntry
  key   CDATA #REQUIRED
  value CDATA #REQUIRED
>
<!-- Note: Heart Rate Variability records captured by Apple Watch may include an associated list of instantaneous beats-per-minute readings. -->
<!ELEMENT HeartRateVariabilityMetadataList (InstantaneousBeatsPerMinute*)>
<!ELEMENT InstantaneousBeatsPerMinute EMPTY>
<!ATTLIST InstantaneousBeatsPerMinute
  bpm  CDATA #REQUIRED
  time CDATA #REQUIRED
>
]>
<HealthData locale="en_US">
 <ExportDate value="2024-06-01 08:10:05 -0700"/>
 <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-02-02" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale" HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>
"""

TYPES = [  # (identifier, unit, low, high, decimals, weight)
    ("HKQuantityTypeIdentifierHeartRate", "count/min", 48, 160, 0, 30),
    ("HKQuantityTypeIdentifierStepCount", "count", 1, 900, 0, 20),
    ("HKQuantityTypeIdentifierActiveEnergyBurned", "kcal", 0, 30, 3, 15),
    ("HKQuantityTypeIdentifierBasalEnergyBurned", "kcal", 0, 5, 3, 12),
    ("HKQuantityTypeIdentifierDistanceWalkingRunning", "km", 0, 1, 4, 10),
    ("HKQuantityTypeIdentifierFlightsClimbed", "count", 1, 5, 0, 3),
    ("HKQuantityTypeIdentifierAppleExerciseTime", "min", 1, 5, 0, 3),
    ("HKQuantityTypeIdentifierAppleStandTime", "min", 1, 5, 0, 3),
    ("HKQuantityTypeIdentifierRespiratoryRate", "count/min", 12, 20, 1, 2),
    ("HKQuantityTypeIdentifierOxygenSaturation", "%", 0.92, 1, 2, 1),
    ("HKCategoryTypeIdentifierSleepAnalysis", None, 0, 0, 0, 1),
]
SLEEP = ["HKCategoryValueSleepAnalysisInBed", "HKCategoryValueSleepAnalysisAsleepCore",
         "HKCategoryValueSleepAnalysisAsleepDeep", "HKCategoryValueSleepAnalysisAsleepREM"]


def stamp(epoch):
    """Local time in America/Los_Angeles with its offset (the US rules since 2007)."""
    t = time.gmtime(epoch - 8 * 3600)
    year = t.tm_year

    def nth_sunday(month, n):
        return 1 + (6 - calendar.weekday(year, month, 1)) % 7 + 7 * (n - 1)

    summer = (3, nth_sunday(3, 2)) <= (t.tm_mon, t.tm_mday) < (11, nth_sunday(11, 1))
    t = time.gmtime(epoch + (-7 if summer else -8) * 3600)
    return "%04d-%02d-%02d %02d:%02d:%02d %s" % (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                                                 "-0700" if summer else "-0800")


def main():
    path, records = sys.argv[1], int(sys.argv[2])
    rng = random.Random(14)
    weights = [t[5] for t in TYPES]
    epoch = 1420070400  # 2015-01-01T00:00:00Z
    step = (1717200000 - epoch) // records  # spread over 2015..2024
    written = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        out.write(DTD)
        stamps = {}
        def s(e):
            text = stamps.get(e)
            if text is None:
                text = stamp(e)
                if len(stamps) > 100000:
                    stamps.clear()
                stamps[e] = text
            return text
        while written < records:
            epoch += rng.randint(1, 2 * step)
            kind = rng.choices(TYPES, weights)[0]
            identifier, unit, low, high, decimals, _ = kind
            begin = epoch
            finish = epoch + (rng.randint(60, 600) if identifier != "HKQuantityTypeIdentifierHeartRate" else 0)
            device = "&lt;&lt;HKDevice: 0x%09x&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2&gt;" % rng.getrandbits(36)
            if unit is None:
                value = rng.choice(SLEEP)
                finish = epoch + rng.randint(600, 7200)
                out.write(' <Record type="%s" sourceName="Alex’s Apple Watch" sourceVersion="10.2" device="%s" creationDate="%s" startDate="%s" endDate="%s" value="%s">\n'
                          '  <MetadataEntry key="HKTimeZone" value="America/Los_Angeles"/>\n </Record>\n'
                          % (identifier, device, s(finish), s(begin), s(finish), value))
            else:
                value = ("%%.%df" % decimals) % rng.uniform(low, high)
                if identifier == "HKQuantityTypeIdentifierHeartRate" and rng.random() < 0.5:
                    out.write(' <Record type="%s" sourceName="Alex’s Apple Watch" sourceVersion="10.2" device="%s" unit="%s" creationDate="%s" startDate="%s" endDate="%s" value="%s">\n'
                              '  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>\n </Record>\n'
                              % (identifier, device, unit, s(finish), s(begin), s(finish), value))
                else:
                    out.write(' <Record type="%s" sourceName="Alex’s Apple Watch" sourceVersion="10.2" device="%s" unit="%s" creationDate="%s" startDate="%s" endDate="%s" value="%s"/>\n'
                              % (identifier, device, unit, s(finish), s(begin), s(finish), value))
            written += 1
            if written % 2000 == 0 and written < records - 2:
                # A blood pressure correlation: its two records at top level, then inside it.
                pair = []
                for kind, v in (("Systolic", rng.randint(105, 135)), ("Diastolic", rng.randint(65, 85))):
                    pair.append('<Record type="HKQuantityTypeIdentifierBloodPressure%s" sourceName="Omron" sourceVersion="2" unit="mmHg" creationDate="%s" startDate="%s" endDate="%s" value="%d"/>'
                                % (kind, s(epoch), s(epoch), s(epoch), v))
                for record in pair:
                    out.write(" " + record + "\n")
                written += 2
                out.write(' <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Omron" sourceVersion="2" creationDate="%s" startDate="%s" endDate="%s">\n'
                          '  %s\n  %s\n </Correlation>\n' % (s(epoch), s(epoch), s(epoch), pair[0], pair[1]))
            if written % 5000 == 0:
                out.write(' <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="31.5" durationUnit="min" totalDistance="5.2" totalDistanceUnit="km" totalEnergyBurned="301.2" totalEnergyBurnedUnit="kcal" sourceName="Alex’s Apple Watch" sourceVersion="10.2" device="%s" creationDate="%s" startDate="%s" endDate="%s">\n'
                          '  <MetadataEntry key="HKIndoorWorkout" value="0"/>\n'
                          '  <WorkoutEvent type="HKWorkoutEventTypeSegment" date="%s" duration="10.5" durationUnit="min"/>\n'
                          '  <WorkoutRoute sourceName="Alex’s Apple Watch" sourceVersion="10.2" creationDate="%s" startDate="%s" endDate="%s">\n'
                          '   <FileReference path="/workout-routes/route_%d.gpx"/>\n  </WorkoutRoute>\n </Workout>\n'
                          % (device, s(epoch + 1890), s(epoch), s(epoch + 1890), s(epoch), s(epoch + 1890), s(epoch), s(epoch + 1890), written))
            if written % 3000 == 0:
                day = stamp(epoch)[:10]
                out.write(' <ActivitySummary dateComponents="%s" activeEnergyBurned="512.3" activeEnergyBurnedGoal="500" activeEnergyBurnedUnit="kcal" appleMoveTime="0" appleMoveTimeGoal="0" appleExerciseTime="34" appleExerciseTimeGoal="30" appleStandHours="12" appleStandHoursGoal="12"/>\n' % day)
        out.write("</HealthData>\n")


if __name__ == "__main__":
    main()
