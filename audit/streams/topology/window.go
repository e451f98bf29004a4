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
	// Emit is the emit strategy (EmitEager; EmitFinal is refused):
	// emitStrategy(onWindowClose) adds no node to describe(), so it is
	// declared, never assumed.
	Emit string
}

// The emit strategies of WindowDecl.Emit.
const (
	// EmitEager is EmitStrategy.onWindowUpdate, Kafka Streams' default:
	// every update is forwarded (through the cache) to the output.
	EmitEager = "eager"
	// EmitFinal is EmitStrategy.onWindowClose: a window is forwarded once,
	// after it closes, from a time-ordered store. Not audited yet.
	EmitFinal = "final"
)

// windowedHint says how to declare a windowed aggregation the audit checks.
const windowedHint = "a time window (tumbling or hopping) is audited when its node is declared in pipeline.nodes as windowed-count, windowed-reduce or windowed-aggregate with window: {size: 1m, grace: 30s, emit: eager} (and advance for a hopping one); session and sliding windows are not audited yet"

// IsWindowed says whether k is a windowed aggregation the audit checks
// (windowed-count, windowed-reduce, windowed-aggregate).
func IsWindowed(k Kind) bool {
	return k == KindWindowedCount || k == KindWindowedReduce || k == KindWindowedAggregate
}

// String prints the window as `lossaudit topology` shows it.
func (w *WindowDecl) String() string {
	if w.Advance == 0 || w.Advance == w.Size {
		return fmt.Sprintf("tumbling, size %s, grace %s", w.Size, w.Grace)
	}
	return fmt.Sprintf("hopping, size %s, advance %s, grace %s", w.Size, w.Advance, w.Grace)
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
	case w.Emit == EmitFinal:
		return errors.New("emit: final (emitStrategy(onWindowClose)) is not audited yet: its windows reach the output only once closed, from a time-ordered store; lossaudit audits windows emitted eagerly (emit: eager)")
	case w.Emit != EmitEager:
		return fmt.Errorf("emit %q is not eager or final", w.Emit)
	case w.Advance < 0 || w.Advance > w.Size || w.Advance%time.Millisecond != 0:
		return fmt.Errorf("advance %s must be whole milliseconds, more than 0 and at most the size %s (omitted: tumbling, advance = size)", w.Advance, w.Size)
	}
	return nil
}

// checkWindowed checks what the windowed aggregation n (its stage ts) must
// be for the check of window.go: no suppress after it (emit-final is not
// audited yet), and a sub-topology reading one topic, so that one task
// reads one partition and its stream time comes from that partition
// alone.
func (t *Topology) checkWindowed(n *Node, ts TopoStage) error {
	if ts.Suppress != "" {
		return fmt.Errorf("suppress %s after a windowed aggregation (emit final) is not audited yet; lossaudit audits windowed aggregations that emit eagerly", ts.Suppress)
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
			return fmt.Errorf("its sub-topology reads %d topics (%s): the window's stream time is computed from the one partition a task reads, so lossaudit audits a windowed aggregation whose sub-topology reads one topic", len(topics), strings.Join(topics, ", "))
		}
	}
	return nil
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
