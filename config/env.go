package config

import (
	"sort"
	"strings"
)

// testbedEnv are the LOSSAUDIT_ variables the test bed and the tests read
// (testbed/kafka, testbed/streamsapp, testbed/e2e, audit/demo/sim,
// audit/app): they select versions, caches and test sizes, not
// configuration keys, and may be set in the environment of any run.
func testbedEnv() []string {
	return []string{
		"LOSSAUDIT_CACHE",           // testbed/kafka: where jars and builds are cached
		"LOSSAUDIT_REAL_KAFKA",      // testbed/kafka: 0 skips the tests that start brokers
		"LOSSAUDIT_KAFKA_VERSION",   // testbed/kafka: the broker version of the tests
		"LOSSAUDIT_STREAMS_VERSION", // testbed/streamsapp: the Kafka Streams version
		"LOSSAUDIT_SIM_SCALE",       // audit/demo/sim: records per input of the scale test
		"LOSSAUDIT_PROPERTY_SEEDS",  // audit/app: seeds of the property test
	}
}

// testbedEnvPrefix starts every other test bed variable
// (LOSSAUDIT_TESTBED_KEEP, ...).
const testbedEnvPrefix = "LOSSAUDIT_TESTBED_"

// IsTestbedEnv reports whether name is a variable of the test bed rather
// than a configuration key: LOSSAUDIT_TESTBED_*, or one of
// LOSSAUDIT_CACHE, LOSSAUDIT_REAL_KAFKA, LOSSAUDIT_KAFKA_VERSION,
// LOSSAUDIT_STREAMS_VERSION, LOSSAUDIT_SIM_SCALE, LOSSAUDIT_PROPERTY_SEEDS.
// Load does not reject these.
func IsTestbedEnv(name string) bool {
	return strings.HasPrefix(name, testbedEnvPrefix) || contains(testbedEnv(), name)
}

// checkEnv returns an *Error naming the first LOSSAUDIT_ variable of
// environ (KEY=value entries) that is neither a key's variable nor a test
// bed variable, with the nearest variable name: like an unknown key in
// the file, a misspelt variable would otherwise be silently ignored.
func checkEnv(environ []string, defs []keyDef) error {
	known := make([]string, len(defs))
	for i, d := range defs {
		known[i] = EnvName(d.key)
	}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || contains(known, name) || IsTestbedEnv(name) {
			continue
		}
		unknown = append(unknown, name)
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	name := unknown[0]
	msg := "is not a lossaudit setting"
	if near := nearest(name, known); near != "" {
		msg += " (did you mean " + near + "?)"
	} else {
		msg += "; the variables are " + EnvPrefix + "_<KEY> for the configuration keys, e.g. LOSSAUDIT_KAFKA_BROKERS for kafka.brokers"
	}
	msg += "; unset it or correct its name"
	if len(unknown) > 1 {
		msg += " (also not settings: " + strings.Join(unknown[1:], ", ") + ")"
	}
	return &Error{Env: name, Msg: msg}
}
