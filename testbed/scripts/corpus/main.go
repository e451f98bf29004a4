// Command corpus runs lossaudit's topology derivation on every
// Topology#describe() text of a directory (by default ../shared/topologies
// relative to the repository root: describe() texts written by others,
// which are not part of the repository) and prints one row per file: its
// verdict (accepted or rejected) and the message, as `lossaudit topology`
// would give it.
//
// Each file gets the most charitable minimal configuration a user could
// write: the topics its sources read that no sink of the topology writes
// are the candidate inputs, tried in every order and each alone; the
// output is the one topic a sink writes that no source reads back, else
// left to the topology file. A file is accepted when any of these
// configurations is; the row then names it. No file should be accepted
// with a wrong model (docs/topology.md#what-lossaudit-audits).
//
// -declared adds, for the files listed in declared.go, what the user of
// each application would declare (kinds, windows, predicates, join types).
//
// Usage: go run ./testbed/scripts/corpus [-v] [-counts] [-declared] [DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
)

func main() {
	verbose := flag.Bool("v", false, "print the configuration tried for every file")
	counts := flag.Bool("counts", false, "declare every KSTREAM-AGGREGATE- node a plain count in pipeline.nodes, as a user whose counts are not windowed would (check the accepted files' sources: a windowed count declared so is the user's mistake)")
	declare := flag.Bool("declared", false, "add the declarations the user of each application would write (declared.go: kinds, windows, predicates, join types taken from the application's code as SOURCES.md quotes it)")
	flag.Parse()
	dir := filepath.Join("..", "shared", "topologies")
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(os.Stderr, "corpus: no *.txt in %s (run from the repository root, or name the directory)\n", dir)
		os.Exit(2)
	}
	slices.Sort(files)
	accepted := 0
	fmt.Println("| file | verdict | message |")
	fmt.Println("| --- | --- | --- |")
	for _, f := range files {
		verdict, msg, tried := judge(f, *counts, *declare)
		if verdict == "accepted" {
			accepted++
		}
		fmt.Printf("| %s | %s | %s |\n", filepath.Base(f), verdict, strings.ReplaceAll(msg, "|", `\|`))
		if *verbose {
			fmt.Printf("|  | tried | %s |\n", strings.Join(tried, "; "))
		}
	}
	fmt.Printf("\n%d files, %d accepted, %d rejected\n", len(files), accepted, len(files)-accepted)
}

// judge derives the model of file with each candidate configuration and
// returns the verdict, the message (the first rejection's, or the
// accepted model) and the configurations tried.
func judge(file string, counts, declare bool) (verdict, msg string, tried []string) {
	f, err := os.Open(file)
	if err != nil {
		return "rejected", err.Error(), nil
	}
	top, err := topology.ParseTopology(f)
	f.Close()
	if err != nil {
		return "rejected", "pipeline.topology_file: " + err.Error(), nil
	}
	inputs, output := endpoints(top)
	if len(inputs) == 0 {
		return "rejected", "no source reads a topic that the topology does not write itself: no input to configure", nil
	}
	var first error
	for _, ins := range candidates(inputs) {
		// The charitable user declares the joins left and the reduces
		// plain, the types audited.
		spec := topology.Spec{ApplicationID: "app", TopologyFile: file, Output: output, Join: topology.JoinLeft, Reduce: topology.ReducePlain}
		if counts {
			spec.Nodes = aggregates(top)
		}
		for i, in := range ins {
			spec.Inputs = append(spec.Inputs, topology.InputSpec{Name: fmt.Sprintf("in%d", i), Topic: in})
		}
		if d, ok := declared[filepath.Base(file)[:2]]; ok && declare {
			d.apply(&spec)
		}
		tried = append(tried, fmt.Sprintf("inputs %s output %q", strings.Join(ins, ","), output))
		m, err := topology.Build(context.Background(), spec, nil)
		if err == nil {
			return "accepted", describe(m), tried
		}
		// The message a user needs most: a node the audit does not
		// support, else the first configuration's.
		var ue *topology.UnsupportedError
		if first == nil || (errors.As(err, &ue) && !errors.As(first, &ue)) {
			first = err
		}
	}
	return "rejected", message(first), tried
}

// aggregates declares every KSTREAM-AGGREGATE- node of top a count and
// every COGROUPKSTREAM-AGGREGATE- node a cogroup.
func aggregates(top *topology.Topology) []topology.NodeDecl {
	var out []topology.NodeDecl
	for _, st := range top.SubTopologies {
		for _, n := range st.Nodes {
			if strings.HasPrefix(n.Name, "KSTREAM-AGGREGATE-") && !strings.Contains(n.Name, "STATE-STORE") {
				out = append(out, topology.NodeDecl{Name: n.Name, Kind: "count"})
			}
			if strings.HasPrefix(n.Name, "COGROUPKSTREAM-AGGREGATE-") && !strings.Contains(n.Name, "STATE-STORE") {
				out = append(out, topology.NodeDecl{Name: n.Name, Kind: "cogroup"})
			}
		}
	}
	return out
}

// message is what `lossaudit topology` prints for err (after "lossaudit: ").
func message(err error) string {
	var ue *topology.UnsupportedError
	var pe *topology.Error
	switch {
	case errors.As(err, &ue):
		ue.File = filepath.Base(ue.File)
		return ue.Error()
	case errors.As(err, &pe):
		return pe.Key + ": " + pe.Msg
	}
	return err.Error()
}

// endpoints returns the topics read by non-global sources that no sink
// writes (in text order), and the one topic written by sinks that no
// source reads, "" unless there is exactly one.
func endpoints(top *topology.Topology) (inputs []string, output string) {
	written, read := map[string]bool{}, map[string]bool{}
	for _, st := range top.SubTopologies {
		for _, n := range st.Nodes {
			switch n.Kind {
			case topology.Sink:
				for _, t := range n.Topics {
					written[t] = true
				}
			case topology.Source:
				for _, t := range n.Topics {
					read[t] = true
				}
			}
		}
	}
	var outs []string
	for _, st := range top.SubTopologies {
		for _, n := range st.Nodes {
			if n.Kind == topology.Source && !st.Global {
				for _, t := range n.Topics {
					if !written[t] && !slices.Contains(inputs, t) {
						inputs = append(inputs, t)
					}
				}
			}
			if n.Kind == topology.Sink {
				for _, t := range n.Topics {
					if !read[t] && !slices.Contains(outs, t) {
						outs = append(outs, t)
					}
				}
			}
		}
	}
	if len(outs) == 1 {
		output = outs[0]
	}
	return inputs, output
}

// candidates are the input lists tried: every order of all inputs (up to
// five of them), then each input alone.
func candidates(inputs []string) [][]string {
	var out [][]string
	if len(inputs) <= 5 {
		out = permutations(inputs)
	} else {
		out = [][]string{inputs}
	}
	if len(inputs) > 1 {
		for _, in := range inputs {
			out = append(out, []string{in})
		}
	}
	return out
}

func permutations(xs []string) [][]string {
	if len(xs) <= 1 {
		return [][]string{slices.Clone(xs)}
	}
	var out [][]string
	for i := range xs {
		rest := slices.Concat(xs[:i:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]string{xs[i]}, p...))
		}
	}
	return out
}

// describe renders an accepted model in one line.
func describe(m *topology.Model) string {
	if m.Stream != nil {
		var parts []string
		for _, in := range m.Stream.Inputs {
			via := strings.Join(in.Via, " -> ")
			if via == "" {
				via = "(pass-through)"
			}
			parts = append(parts, in.Topic+" -> "+via)
		}
		return "per-record stream stage: " + strings.Join(parts, "; ") + " -> " + m.Stream.Output
	}
	var parts []string
	for _, s := range m.Stages {
		rp := s.RepartitionTopic
		if rp == "" {
			rp = "(no repartition)"
		}
		op := s.Operator
		if op == "" {
			op = topology.KindReduce
		}
		parts = append(parts, fmt.Sprintf("%s -> %s -> %s store %s", s.Input.Topic, rp, op, s.Store))
	}
	join := m.Join
	if join == "" {
		join = topology.JoinLeft
	}
	msg := strings.Join(parts, " "+join+" join ") + " -> " + m.Output
	if len(m.Stages) > 1 {
		msg += " (joins declared " + join + ": describe() prints inner, left and outer alike, so the verdict holds for the type the application uses once declared)"
	}
	if len(m.Warnings) > 0 {
		msg += " (warnings: " + strings.Join(m.Warnings, "; ") + ")"
	}
	return msg
}
