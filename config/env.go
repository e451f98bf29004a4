package config

import (
	"sort"
	"strings"
)

// checkEnv returns an *Error naming the first LOSSAUDIT_ variable of
// environ (KEY=value entries) that is neither a key's variable nor one
// ignore accepts (the caller's own, e.g. a test harness's), with the
// nearest variable name: like an unknown key in the file, a misspelt
// variable would otherwise be silently ignored.
func checkEnv(environ []string, specs []keySpec, ignore func(string) bool) error {
	known := make([]string, len(specs))
	for i, s := range specs {
		known[i] = EnvName(s.key)
	}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || contains(known, name) || (ignore != nil && ignore(name)) {
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
