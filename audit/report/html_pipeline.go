package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// pipelineView is the picture of a Kafka Streams pipeline as the audit
// modelled it: one lane per input (input topic, its repartition topic if
// any, the table's store and changelog, a suppress buffer if any), the
// join of the tables when there are several, and the output topic, or
// none when the table is the pipeline's end. It never draws a stage the
// audit did not check.
type pipelineView struct {
	Hint  string
	Lanes []pipelineLane
	// Join is nil for one input; Output nil when there is none.
	Join   *pipelineNode
	Output *pipelineNode
}

// pipelineLane is one input's boxes, left to right.
type pipelineLane struct {
	Nodes []pipelineNode
}

// pipelineNode is one box of the picture. Stage and Input identify it
// (data attributes of the box); Findings counts what was found there: the
// key findings of its stage and the partition findings of its topic.
type pipelineNode struct {
	Role  string // what the box is, as the user reads it
	Stage string // input, repartition, changelog, join, output
	Input string
	Topic string
	// Facts are counts worth reading in every run; Problems what was
	// found here, one line each.
	Facts    []string
	Problems []string
	Findings int64
}

// newPipelineView draws pl, the pipeline of a Kafka Streams audit, with
// what res found along it; nil when pl describes no pipeline.
func newPipelineView(res *finding.Result, pl *finding.Pipeline) *pipelineView {
	s := &res.Summary
	if pl == nil || len(pl.Inputs) == 0 {
		return nil
	}
	f := newPipelineFindings(res)
	v := &pipelineView{Hint: pipelineHint(pl)}
	for _, in := range pl.Inputs {
		inNode := inputNode(in, s.Inputs[in.Name])
		f.partProblems(&inNode, in.Topic)
		lane := pipelineLane{Nodes: []pipelineNode{inNode}}

		if in.RepartitionTopic != "" {
			rep := pipelineNode{Role: "selectKey, repartition", Stage: "repartition", Input: safe(in.Name), Topic: safe(in.RepartitionTopic)}
			if in.Operator == "table-count" || in.Operator == "table-reduce" || in.Operator == "table-aggregate" {
				rep.Role = "table, groupBy, repartition"
			}
			f.partProblems(&rep, in.RepartitionTopic)
			lane.Nodes = append(lane.Nodes, rep)
		}

		store := pipelineNode{Role: operatorWord(in) + " store, changelog", Stage: string(finding.StageChangelog), Input: safe(in.Name), Topic: safe(in.ChangelogTopic)}
		f.keyProblems(&store, finding.StageChangelog, in.Name)
		if in.Count {
			store.Role = operatorWord(in) + " store, changelog (recounted)"
			f.keyProblems(&store, finding.StageCount, in.Name)
		}
		if in.Table {
			tableStore(&store, in)
		}
		f.partProblems(&store, in.ChangelogTopic)
		lane.Nodes = append(lane.Nodes, store)

		if in.BufferTopic != "" {
			buf := pipelineNode{Role: "suppress buffer, changelog", Stage: "buffer", Input: safe(in.Name), Topic: safe(in.BufferTopic),
				Facts: []string{"a key it still holds is pending at the output"}}
			f.partProblems(&buf, in.BufferTopic)
			lane.Nodes = append(lane.Nodes, buf)
		}
		v.Lanes = append(v.Lanes, lane)
	}
	if len(pl.Inputs) > 1 {
		join := pipelineNode{Role: "leftJoin", Stage: "join", Facts: []string{"the tables, in input order"}}
		switch pl.Join {
		case "inner":
			join.Role = "join (inner)"
		case "outer":
			join.Role = "outerJoin"
		case "cogroup":
			join.Role, join.Facts = "cogroup", []string{"one table fed by every input"}
		}
		if c := s.Stages[finding.StageChangelog]; c != nil {
			join.Facts = append(join.Facts, Thousands(c.KeysChecked)+" keys checked at the changelogs")
		}
		v.Join = &join
	}
	if pl.Output == "" {
		return v
	}
	out := pipelineNode{Role: "output", Stage: string(finding.StageOutput), Topic: safe(pl.Output)}
	if c := s.Stages[finding.StageOutput]; c != nil {
		out.Facts = append(out.Facts, Thousands(c.KeysChecked)+" keys checked")
		if c.KeysPending > 0 {
			out.Facts = append(out.Facts, Thousands(c.KeysPending)+" pending in the suppress buffer")
		}
	}
	var names []string
	for _, in := range pl.Inputs {
		names = append(names, in.Name)
	}
	f.keyProblems(&out, finding.StageOutput, names...)
	f.partProblems(&out, pl.Output)
	v.Output = &out
	return v
}

// operatorWord names the operator that writes in's table, as the picture
// shows it.
func operatorWord(in finding.PipelineInput) string {
	switch in.Operator {
	case "count", "aggregate", "reduce", "cogroup":
		return in.Operator
	case "windowed-count", "windowed-reduce", "windowed-aggregate", "table-count", "table-reduce", "table-aggregate":
		return strings.Replace(in.Operator, "-", " ", 1)
	case "":
		if in.Count {
			return "count"
		}
		return "reduce"
	}
	return "table"
}

// pipelineHint is the sentence above the picture: how records flow in pl.
func pipelineHint(pl *finding.Pipeline) string {
	var b strings.Builder
	switch {
	case pl.Join == "cogroup":
		b.WriteString("Each input reaches the cogroup's one table (through its repartition topic when re-keyed), which is checked against each of them and streamed into the output, if any.")
	case len(pl.Inputs) > 1:
		b.WriteString("Each input reaches its table (through its repartition topic when re-keyed); the tables are joined into the output.")
	case pl.Output == "":
		b.WriteString("The input reaches its table (through its repartition topic when re-keyed); the table's changelog is the pipeline's end: there is no output topic.")
	default:
		b.WriteString("The input reaches its table (through its repartition topic when re-keyed), which is streamed into the output.")
	}
	b.WriteString(" A red box is a stage where updates went missing.")
	return b.String()
}

// inputNode is the box of one input, with its counts c (nil: none).
func inputNode(in finding.PipelineInput, c *finding.InputCounts) pipelineNode {
	if c == nil {
		c = &finding.InputCounts{}
	}
	n := pipelineNode{Role: "input " + safe(in.Name), Stage: "input", Input: safe(in.Name), Topic: safe(in.Topic),
		Facts: []string{Thousands(c.Audited) + " audited"}}
	if c.Pending > 0 {
		n.Facts = append(n.Facts, Thousands(c.Pending)+" pending")
	}
	if d := c.NullKey + c.NullValue + c.Filtered; d > 0 {
		n.Facts = append(n.Facts, Thousands(d)+" dropped by design")
	}
	if c.Uncertain > 0 {
		n.Facts = append(n.Facts, Thousands(c.Uncertain)+" uncertain")
	}
	if c.DecodeErrors > 0 {
		n.Facts = append(n.Facts, Thousands(c.DecodeErrors)+" undecodable")
	}
	if c.OutsideWindow > 0 {
		n.Facts = append(n.Facts, Thousands(c.OutsideWindow)+" outside the window")
	}
	return n
}

// stageInput names the key findings of one input at one stage.
type stageInput struct {
	stage finding.Stage
	input string
}

// pipelineFindings are a result's findings as the picture places them:
// key findings by stage and input, counted by kind, and partition
// findings by topic.
type pipelineFindings struct {
	kinds   map[stageInput]map[finding.Kind]int64
	byTopic map[string][]*finding.PartitionFinding
}

func newPipelineFindings(res *finding.Result) *pipelineFindings {
	f := &pipelineFindings{kinds: map[stageInput]map[finding.Kind]int64{}, byTopic: map[string][]*finding.PartitionFinding{}}
	for i := range res.Summary.Partitions {
		p := &res.Summary.Partitions[i]
		f.byTopic[p.Topic] = append(f.byTopic[p.Topic], p)
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		k := stageInput{r.Stage, r.Input}
		if f.kinds[k] == nil {
			f.kinds[k] = map[finding.Kind]int64{}
		}
		f.kinds[k][r.Kind]++
	}
	return f
}

// keyProblems adds the key findings of stage for the inputs named, one
// line per kind; with several inputs, the line says how many each had.
func (f *pipelineFindings) keyProblems(n *pipelineNode, stage finding.Stage, inputs ...string) {
	total := map[finding.Kind]int64{}
	for _, name := range inputs {
		for k, c := range f.kinds[stageInput{stage, name}] {
			total[k] += c
		}
	}
	for _, kind := range kindOrder(total) {
		line := plural(total[kind], "update", "updates") + " " + safe(string(kind))
		if len(inputs) > 1 {
			var per []string
			for _, name := range inputs {
				if c := f.kinds[stageInput{stage, name}][kind]; c > 0 {
					per = append(per, safe(name)+" "+Thousands(c))
				}
			}
			line += " (" + strings.Join(per, ", ") + ")"
		}
		n.Problems = append(n.Problems, line)
		n.Findings += total[kind]
	}
}

// partProblems adds the partition findings of topic, one line each.
func (f *pipelineFindings) partProblems(n *pipelineNode, topic string) {
	for _, p := range f.byTopic[topic] {
		n.Problems = append(n.Problems, fmt.Sprintf("%s on partition %d", safe(string(p.Kind)), p.Partition))
		n.Findings++
	}
}

// kindOrder returns the kinds counted in m: the known kinds in report
// order (the audit's missing, stale, aborted, then the comparison's), then
// the others by name.
func kindOrder(m map[finding.Kind]int64) []finding.Kind {
	known := stageKinds([]finding.Stage{finding.StageChangelog, finding.StageSink, finding.StageLedger})
	var out, extra []finding.Kind
	for _, k := range known {
		if m[k] > 0 {
			out = append(out, k)
		}
	}
	for k, n := range m {
		if n > 0 && !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// tableStore words the store of an input read by a table source: a table
// that holds each key's last record by offset (restored from the input
// topic when it has no changelog).
func tableStore(store *pipelineNode, in finding.PipelineInput) {
	store.Role = "table source store, changelog (last record by offset)"
	if in.ChangelogTopic == "" {
		store.Role, store.Topic = "table store, restored from the input topic", safe(in.Topic)
	}
}
