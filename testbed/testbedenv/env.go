// Package testbedenv names the LOSSAUDIT_ environment variables of the test bed
// and the tests (versions, caches, test sizes): they are not configuration
// keys, and the configuration loader would otherwise refuse them as
// misspelt settings. Whatever loads a configuration in a test process passes
// Is as config.LoadOptions.IgnoreEnv (the tests' in-process command tree
// does); whatever starts the lossaudit binary gives it Strip(os.Environ()):
// only a binary built with -tags testbed knows variables of its own, its
// failpoints (LOSSAUDIT_TESTBED_CRASH_AT, _INTERRUPT_AT).
package testbedenv

import (
	"slices"
	"strings"
)

// Names returns the test bed's variables other than LOSSAUDIT_TESTBED_*.
func Names() []string {
	return []string{
		"LOSSAUDIT_CACHE",           // testbed/kafka: where jars and builds are cached
		"LOSSAUDIT_REAL_KAFKA",      // testbed/kafka: 0 skips the tests that start brokers
		"LOSSAUDIT_KAFKA_VERSION",   // testbed/kafka: the broker version of the tests
		"LOSSAUDIT_STREAMS_VERSION", // testbed/streamsapp: the Kafka Streams version
		"LOSSAUDIT_SIM_SCALE",       // audit/demo/sim: records per input of the scale test
		"LOSSAUDIT_PROPERTY_SEEDS",  // audit/app: seeds of the property test
		"LOSSAUDIT_SHARD_MEASURE",   // audit/app, cmd/lossaudit: records per input of the shard measurements
	}
}

// Prefix starts every other test bed variable (LOSSAUDIT_TESTBED_KEEP, ...).
const Prefix = "LOSSAUDIT_TESTBED_"

// Is reports whether name is a variable of the test bed rather than a
// configuration key: LOSSAUDIT_TESTBED_* or one of Names.
func Is(name string) bool {
	return strings.HasPrefix(name, Prefix) || slices.Contains(Names(), name)
}

// Strip returns env (NAME=value entries) without the test bed's variables
// (Is): the environment for a lossaudit process a test starts, which would
// refuse them as misspelt settings. A test that sets a failpoint appends it
// after Strip (and builds the binary with -tags testbed).
func Strip(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !Is(name) {
			out = append(out, kv)
		}
	}
	return out
}
