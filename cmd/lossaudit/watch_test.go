package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/metrics"
)

func TestWatchHealth(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		steps   func(w *watcher)
		now     time.Duration // after t0
		code    int
		because string
	}{
		{"the baseline is running", func(w *watcher) {}, 10 * time.Minute, 200, "baseline"},
		{"the first step failed", func(w *watcher) { w.failed(t0, errors.New("brokers unreachable")) }, time.Minute, 503, "brokers unreachable"},
		{"the last step succeeded two intervals ago", func(w *watcher) { w.completed(cleanResultForFinish(), t0) }, 2 * time.Minute, 200, "succeeded"},
		{"no success for more than three intervals", func(w *watcher) { w.completed(cleanResultForFinish(), t0) }, 3*time.Minute + time.Second, 503, "three intervals"},
		{"a success after a failure", func(w *watcher) {
			w.failed(t0, errors.New("x"))
			w.completed(cleanResultForFinish(), t0.Add(time.Minute))
		}, 2 * time.Minute, 200, "succeeded"},
		{"a failure after a success", func(w *watcher) {
			w.completed(cleanResultForFinish(), t0)
			w.failed(t0.Add(time.Minute), errors.New("registry down"))
		}, 2 * time.Minute, 503, "registry down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &watcher{interval: time.Minute, m: metrics.New(), now: func() time.Time { return t0.Add(tt.now) }}
			tt.steps(w)
			rec := httptest.NewRecorder()
			w.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.because) {
				t.Errorf("/healthz = %d %q, want %d saying %q", rec.Code, rec.Body.String(), tt.code, tt.because)
			}
		})
	}
	// Before a step completed, the reports are not there yet.
	w := &watcher{interval: time.Minute, m: metrics.New(), now: time.Now}
	for _, p := range []string{"/report.json", "/loss-report.csv", "/"} {
		rec := httptest.NewRecorder()
		w.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s before the first step: %d, want 503", p, rec.Code)
		}
	}
}

// TestStepWarningsAreLogged: what a step warns about reaches watch's log,
// once per process; what the reader waits for, every time; partial writes
// are joined into lines.
func TestStepWarningsAreLogged(t *testing.T) {
	var logs bytes.Buffer
	w := newStepWarnings(slog.New(slog.NewJSONHandler(&logs, nil)))
	for range 2 { // two steps
		fmt.Fprint(w, "warning: input a: the cleanup.policy of changelog topic app-s-changelog (store s) was not checked")
		fmt.Fprint(w, ": not authorized (DESCRIBE_CONFIGS on the topic is needed)\n")
		fmt.Fprint(w, "lossaudit: waiting for broker 127.0.0.1:9092\n")
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		got = append(got, fmt.Sprint(m["level"], " ", m["msg"]))
	}
	want := []string{
		"WARN input a: the cleanup.policy of changelog topic app-s-changelog (store s) was not checked: not authorized (DESCRIBE_CONFIGS on the topic is needed)",
		"INFO waiting for broker 127.0.0.1:9092",
		"INFO waiting for broker 127.0.0.1:9092",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
