package report

import (
	"fmt"
	"io"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// manyRows makes n distinct rows over three inputs and both stages.
func manyRows(n int) *finding.Result {
	res := &finding.Result{Summary: baseSummary()}
	for i := range n {
		res.Rows = append(res.Rows, finding.Row{Kind: finding.Missing, Stage: []finding.Stage{finding.StageChangelog, finding.StageOutput}[i%2],
			Input: []string{"c", "a", "b"}[i%3], Key: fmt.Appendf(nil, "customer-%09d", (i*7919)%n), Topic: "topicA",
			Partition: int32(i % 12), Offset: int64(i), Timestamp: ms(10, 0, 0, 0) + int64(i), ExpectedTS: ms(10, 0, 0, 0) + int64(i),
			Evidence: &finding.Witness{Topic: "myapp-g-repartition", Seen: true, Partition: 3, Offset: 12345}})
	}
	finding.SortRows(res.Rows, res.Summary.InputOrder)
	return res
}

// BenchmarkReports: go test -run - -bench Reports -benchmem ./audit/report
func BenchmarkReports(b *testing.B) {
	res := manyRows(100_000)
	b.Run("csv-100k", func(b *testing.B) {
		for b.Loop() {
			if err := WriteResultCSV(io.Discard, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-100k", func(b *testing.B) {
		for b.Loop() {
			if err := WriteJSON(io.Discard, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("summary-100k", func(b *testing.B) {
		for b.Loop() {
			if err := WriteSummary(io.Discard, res, SummaryOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
