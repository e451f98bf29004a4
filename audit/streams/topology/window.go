package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// WindowDecl is the window of a windowed aggregation, declared in
// pipeline.nodes (describe() never prints it): TimeWindows.ofSizeAndGrace
// (size, grace), tumbling when Advance is 0 or Size, hopping
// (advanceBy(advance)) when it is less.
type WindowDecl struct {
	Size, Advance, Grace time.Duration
	// Emit is the emit strategy, EmitEager or EmitFinal: neither
	// emitStrategy(onWindowClose) nor the kind of a suppress shows in
	// describe(), so it is declared, never assumed. EmitFinal is audited
	// with a suppress(untilWindowCloses) after the aggregation (a buffer
	// stage); without one (emitStrategy(onWindowClose)) it is refused.
	Emit string
}

// The emit strategies of WindowDecl.Emit.
const (
	// EmitEager is EmitStrategy.onWindowUpdate, Kafka Streams' default:
	// every update is forwarded (through the cache) to the output.
	EmitEager = "eager"
	// EmitFinal: a window reaches the output once, after it closes:
	// through suppress(Suppressed.untilWindowCloses(...)) after the
	// aggregation (audited: the suppress buffer's changelog says which
	// windows are still held), or emitStrategy(onWindowClose) (refused:
	// a new task instance can update a window it already emitted and
	// never emit it again, which the topics cannot tell from a loss).
	EmitFinal = "final"
)

// windowedHint says how to declare a windowed aggregation the audit checks.
const windowedHint = "a time window (tumbling or hopping) is audited when its node is declared in pipeline.nodes as windowed-count, windowed-reduce or windowed-aggregate with window: {size: 1m, grace: 30s, emit: eager} (and advance for a hopping one; emit: final with a suppress(untilWindowCloses) after it); session and sliding windows are not audited yet"

// IsWindowed says whether k is a windowed aggregation the audit checks
// (windowed-count, windowed-reduce, windowed-aggregate).
func IsWindowed(k Kind) bool {
	return k == KindWindowedCount || k == KindWindowedReduce || k == KindWindowedAggregate
}

// String prints the window as `lossaudit topology` shows it.
func (w *WindowDecl) String() string {
	final := ""
	if w.Emit == EmitFinal {
		final = ", emit final"
	}
	if w.Advance == 0 || w.Advance == w.Size {
		return fmt.Sprintf("tumbling, size %s, grace %s%s", w.Size, w.Grace, final)
	}
	return fmt.Sprintf("hopping, size %s, advance %s, grace %s%s", w.Size, w.Advance, w.Grace, final)
}

// checkWindowDecl checks the window declared for a node of kind k: a
// windowed kind needs a window with a positive whole number of
// milliseconds as size, an advance of 0 (tumbling) or up to the size, and
// a grace of zero or more; any other kind takes none.
func checkWindowDecl(k Kind, w *WindowDecl) error {
	if !IsWindowed(k) {
		if w != nil {
			return fmt.Errorf("a window is declared for a node of kind %s; only windowed-count, windowed-reduce and windowed-aggregate take one", k)
		}
		return nil
	}
	switch {
	case w == nil:
		return fmt.Errorf("a %s node needs its window, which describe() does not print: window: {size: 1m, grace: 30s} (TimeWindows.ofSizeAndGrace)", k)
	case w.Size <= 0 || w.Size%time.Millisecond != 0:
		return fmt.Errorf("size %s must be a positive whole number of milliseconds", w.Size)
	case w.Grace < 0 || w.Grace%time.Millisecond != 0:
		return fmt.Errorf("grace %s must be zero or more whole milliseconds (TimeWindows.ofSizeWithNoGrace is grace 0)", w.Grace)
	case w.Emit == "":
		return errors.New("emit is not set: declare emit: eager (emitStrategy(onWindowUpdate), Kafka Streams' default) or final (emitStrategy(onWindowClose)); describe() prints neither")
	case w.Emit != EmitEager && w.Emit != EmitFinal:
		return fmt.Errorf("emit %q is not eager or final", w.Emit)
	case w.Advance < 0 || w.Advance > w.Size || w.Advance%time.Millisecond != 0:
		return fmt.Errorf("advance %s must be whole milliseconds, more than 0 and at most the size %s (omitted: tumbling, advance = size)", w.Advance, w.Size)
	}
	return nil
}

// checkWindowed checks what the windowed aggregation n (its stage ts) must
// be for the check of window.go: a suppress after it exactly when its
// window is declared emit: final (describe() prints untilWindowCloses and
// untilTimeLimit alike, and emitStrategy(onWindowClose) not at all), and
// a sub-topology reading one topic, so that one task reads one partition
// and its stream time comes from that partition alone. The error names
// the node to refuse (the suppress, or n).
func (t *Topology) checkWindowed(n *Node, ts TopoStage) (*Node, error) {
	switch {
	case ts.Suppress != "" && ts.Window.Emit != EmitFinal:
		s, _ := t.Node(ts.Suppress)
		return s, fmt.Errorf("a suppress after the windowed aggregation %s declared emit: %s: declare the window emit: final when it is suppress(Suppressed.untilWindowCloses(...)) (audited: a window reaches the output once closed); a suppress(untilTimeLimit) of a windowed table is not audited", n.Name, ts.Window.Emit)
	case ts.Suppress == "" && ts.Window.Emit == EmitFinal:
		return n, errors.New("emit: final without a suppress after the aggregation is emitStrategy(onWindowClose), which is not audited yet: the committed offsets' metadata says up to which close time the task emitted, but a new task instance (a restart, a rebalance) starts its stream time anew while it resumes that close time, so it can add a late record to a window it already emitted and never emit that window again; the changelog then holds the window newer than the output, or alone, with nothing lost, and the topics do not say which changelog records came after the emission (topology.md, emit final); with suppress(untilWindowCloses) the suppress node follows the aggregation in describe()")
	}
	for _, st := range t.SubTopologies {
		if !slices.Contains(st.Nodes, n) {
			continue
		}
		var topics []string
		for _, m := range st.Nodes {
			if m.Kind == Source {
				topics = append(topics, m.Topics...)
				if m.Pattern != "" {
					topics = append(topics, "pattern "+m.Pattern)
				}
			}
		}
		if len(topics) != 1 || strings.HasPrefix(topics[0], "pattern ") {
			return n, fmt.Errorf("its sub-topology reads %d topics (%s): the window's stream time is computed from the one partition a task reads, so lossaudit audits a windowed aggregation whose sub-topology reads one topic", len(topics), strings.Join(topics, ", "))
		}
	}
	return nil, nil
}

// applyWindows gives each node declared windowed-count, windowed-reduce or
// windowed-aggregate in nodes (pipeline.nodes) its window from windows (by
// pipeline.nodes index), and refuses a window missing, malformed or given
// to another kind (a *DeclarationError naming pipeline.nodes[i].window).
func applyWindows(kinds map[string]Classified, nodes []NodeDecl, windows map[int]*WindowDecl) error {
	for i, d := range nodes {
		name := strings.TrimSpace(d.Name)
		c, ok := kinds[name]
		if !ok || c.Origin != FromDeclaration {
			continue
		}
		w := windows[i]
		if err := checkWindowDecl(c.Kind, w); err != nil {
			return &DeclarationError{Index: i, Field: "window", Node: name, Msg: err.Error()}
		}
		if w != nil {
			c.Window = w
			kinds[name] = c
		}
	}
	return nil
}
