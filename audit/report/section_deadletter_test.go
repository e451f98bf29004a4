package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestDeadLetterSection: the dead-lettered input records reach the
// summary (counts per input, the records, hostile text made safe), the
// JSON block "dead_lettered" and the HTML report (escaped); the verdict
// does not count them.
func TestDeadLetterSection(t *testing.T) {
	res := findingsResult()
	clean := findingsResult()
	dl := &finding.DeadLetters{Topic: "app-dlq", Read: 3, Unreadable: 1,
		ByInput: []finding.InputDeadLetters{{Input: "a", Count: 2}, {Input: "b"}},
		Records: []finding.DeadLettered{
			{Input: "a", Topic: "in-a", Partition: 0, Offset: 41, Timestamp: 1764669600000, DLQOffset: 0,
				Exception: "org.apache.kafka.common.errors.SerializationException", Message: "bad \x1b[31m<b>bytes</b>"},
			{Input: "a", Topic: "in-a", Partition: 1, Offset: 7, Timestamp: 1764669601000, ViaTopic: "app-s-repartition", ViaPartition: 2, ViaOffset: 9, DLQOffset: 1,
				Exception: "java.lang.ArithmeticException", Message: "/ by zero"},
		}}
	res.Summary.Sections = append(res.Summary.Sections, dl)

	var sum bytes.Buffer
	if err := WriteSummary(&sum, res, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	text := sum.String()
	for _, want := range []string{"Dead-lettered\n", "in-a[0]@41", "in-a[1]@7", "app-s-repartition[2]@9", "java.lang.ArithmeticException",
		"dropped on purpose: the input records the dead-letter topic app-dlq names", "unreadable, exempting nothing (no __streams.errors.topic, partition and offset headers): 1 dead-letter record"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Error("the summary writes a control character from the dead-letter message")
	}
	var plain bytes.Buffer
	if err := WriteSummary(&plain, clean, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }; first(text) != first(plain.String()) {
		t.Errorf("the verdict changed: %q, without the section %q", first(text), first(plain.String()))
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		DL struct {
			Topic   string `json:"topic"`
			ByInput []struct {
				Input string `json:"input"`
				N     int64  `json:"dead_lettered"`
			} `json:"by_input"`
			Records []struct {
				Topic     string `json:"topic"`
				Offset    int64  `json:"offset"`
				ViaTopic  string `json:"via_topic"`
				ViaOffset *int64 `json:"via_offset"`
				Message   string `json:"message"`
			} `json:"records"`
			Unreadable int64 `json:"unreadable"`
		} `json:"dead_lettered"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if d := doc.DL; d.Topic != "app-dlq" || len(d.ByInput) != 2 || d.ByInput[0].N != 2 || len(d.Records) != 2 || d.Records[0].ViaOffset != nil ||
		d.Records[1].ViaTopic != "app-s-repartition" || d.Records[1].ViaOffset == nil || *d.Records[1].ViaOffset != 9 || d.Unreadable != 1 {
		t.Errorf("JSON block %+v", d)
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, res, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := h.String(); !strings.Contains(s, "Dead-lettered records") || strings.Contains(s, "<b>bytes</b>") {
		t.Errorf("HTML report: the records card is missing or the message is not escaped")
	}
}
