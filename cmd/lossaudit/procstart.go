package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// mainStarted is when the main package was initialised: the process's
// start when /proc does not say (processStart).
var mainStarted = time.Now()

// processStart returns when this process started: its age from
// /proc/self/stat (the start in clock ticks since boot, at Linux's fixed
// 100 ticks per second) and /proc/uptime (the time since boot, on the same
// clock), so within about 20 ms; where they cannot be read, when the main
// package was initialised (after every imported package's).
func processStart() time.Time {
	now := time.Now()
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return mainStarted
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return mainStarted
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after it start at field 3, and starttime is field 22.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return mainStarted
	}
	fields, upFields := bytes.Fields(stat[i+1:]), bytes.Fields(up)
	if len(fields) < 20 || len(upFields) < 1 {
		return mainStarted
	}
	ticks, err := strconv.ParseInt(string(fields[19]), 10, 64)
	if err != nil {
		return mainStarted
	}
	uptime, err := strconv.ParseFloat(string(upFields[0]), 64)
	if err != nil {
		return mainStarted
	}
	age := time.Duration(uptime*float64(time.Second)) - time.Duration(ticks)*10*time.Millisecond
	if age < now.Sub(mainStarted) || age > now.Sub(mainStarted)+time.Minute {
		return mainStarted // not this process's clock: keep what is sure
	}
	return now.Add(-age)
}
