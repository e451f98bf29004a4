#!/usr/bin/env bash
# Downloads Apache Kafka (broker) jars from Maven Central and builds the Kafka
# Streams test application, into testbed/.cache (or $LOSSAUDIT_CACHE), so the
# end-to-end tests start without a first-time download.
#
#   LOSSAUDIT_KAFKA_VERSION    broker version   (default 3.9.2; 4.x works, e.g. 4.1.2)
#   LOSSAUDIT_STREAMS_VERSION  Kafka Streams    (default 3.6.2, the user story's)
#
# The Go tests install the same way on first use (testbed/kafka.Install,
# testbed/streamsapp.Build) and reuse this script's results: a broker version
# is complete when <cache>/kafka-<v>/.complete exists, and the application is
# rebuilt when the hash of its pom.xml and sources changes. The hash is
# computed by Go, so this script builds through the Go helper.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here/.."
for tool in java mvn go; do
  command -v "$tool" >/dev/null || { echo "install.sh: $tool is required" >&2; exit 1; }
done
go run ./testbed/scripts/install "$@"
