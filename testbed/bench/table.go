package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// markdown renders the results: parameters, then one row per reader run.
// Ratios compare runs of the same round (side by side on the same brokers
// and page cache): audit throughput / raw throughput, and the windowed
// audit's wall time / the full audit's.
func markdown(o benchOptions, m *manifest, rs []result, step *stepCost) string {
	var b strings.Builder
	n := pipelineNames()
	all := m.total(n.audited())
	var inputs topicCount
	for _, t := range n.inputs {
		inputs.Records += m.Topics[t].Records
		inputs.Bytes += m.Topics[t].Bytes
	}
	fmt.Fprintf(&b, "## lossaudit benchmark, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Data: %d input records (%.0f MiB) over 3 inputs, %d keys per input; %d records (%.0f MiB) in the %d audited topics "+
		"(inputs, repartition tails, changelogs, output); %d partitions per topic, replication factor %d, %s; loaded in %.0f s. Window: --from %s. Commit %s.\n\n",
		inputs.Records, mib(inputs.Bytes), m.Keys, all.Records, mib(all.Bytes), len(n.audited()), m.Spec.Partitions, m.Spec.RF,
		m.Spec.Compression, m.LoadSeconds, m.windowFrom().Format(time.RFC3339), gitRev())
	fmt.Fprintf(&b, "| reader | wall s | CPU s | records/s | MB/s | peak RSS MiB | audit/raw throughput vs kcat | vs franz-go | wall / full audit's | index entries / record read |\n")
	fmt.Fprintf(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	var kcat, franz, full time.Duration
	var fullRate float64
	var cmpNotes []string
	for _, r := range rs {
		vsK, vsF, win := "", "", ""
		switch {
		case strings.HasPrefix(r.Name, "kcat"):
			kcat = r.Wall
		case strings.HasPrefix(r.Name, "franz-go"):
			franz = r.Wall
		case strings.Contains(r.Name, "--from"), strings.HasPrefix(r.Name, "lossaudit reconcile"):
			if full > 0 {
				win = fmt.Sprintf("%.1f%%", 100*r.Wall.Seconds()/full.Seconds())
			}
		case strings.HasPrefix(r.Name, "lossaudit compare"):
			if fullRate > 0 {
				cmpNotes = append(cmpNotes, fmt.Sprintf("%s: %.2f of the full audit's records/s", r.Name, r.recPerSec()/fullRate))
			}
		default:
			full, fullRate = r.Wall, r.recPerSec()
			if kcat > 0 {
				vsK = fmt.Sprintf("%.2f", kcat.Seconds()/r.Wall.Seconds())
			}
			if franz > 0 {
				vsF = fmt.Sprintf("%.2f", franz.Seconds()/r.Wall.Seconds())
			}
		}
		cpu := ""
		if r.CPU > 0 {
			cpu = fmt.Sprintf("%.2f", r.CPU.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s | %.0f | %.1f | %.0f | %s | %s | %s | %s |\n", r.Name, r.Wall.Seconds(), cpu, r.recPerSec(), r.mbPerSec(),
			mib(r.MaxRSS), vsK, vsF, win, r.entriesPerRecord())
	}
	for _, c := range cmpNotes {
		fmt.Fprintf(&b, "\nThroughput per record read, %s.\n", c)
	}
	if step != nil {
		b.WriteString(step.markdown(full))
	}
	fmt.Fprintf(&b, "\nrecords/s and MB/s count every record (key+value bytes) of the audited topics, also for the windowed audit (which reads about 5%% of them) and the reconcile baseline; for the reconcile step, the records it read. CPU s is the reader's user and system CPU time (the brokers' not included): on a shared machine it moves less than the wall time. Commands:\n\n")
	seen := map[string]bool{}
	for _, r := range rs {
		base := strings.SplitN(r.Name, " #", 2)[0]
		if !seen[base] {
			seen[base] = true
			fmt.Fprintf(&b, "- %s: `%s`\n", base, r.Command)
		}
	}
	fmt.Fprintf(&b, "- harness: `go run ./testbed/bench %s`\n", strings.Join(os.Args[1:], " "))
	return b.String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func gitRev() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
