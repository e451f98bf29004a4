package topology

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NodeKind says what a node of a described topology is.
type NodeKind int

// The node kinds of Topology#describe().
const (
	// Source reads one or more topics (or a topic pattern).
	Source NodeKind = iota
	// Processor transforms records and may use state stores.
	Processor
	// Sink writes to one topic (or to topics chosen by an extractor).
	Sink
)

// String returns the word describe() prints for the kind.
func (k NodeKind) String() string {
	switch k {
	case Source:
		return "Source"
	case Processor:
		return "Processor"
	case Sink:
		return "Sink"
	}
	return "NodeKind(" + strconv.Itoa(int(k)) + ")"
}

// Node is one `Source:`, `Processor:` or `Sink:` entry of describe().
type Node struct {
	Kind NodeKind
	Name string
	// Topics are a source's topics or a sink's single topic, exactly as
	// printed (internal topics without the application.id prefix).
	Topics []string
	// Pattern is a source's topic pattern, when it reads by pattern.
	Pattern string
	// Extractor is set for a sink that chooses its topic dynamically.
	Extractor string
	// Stores are a processor's state stores.
	Stores []string
	// Successors and Predecessors are the `-->` and `<--` lists.
	Successors, Predecessors []string
	// Line is the 1-based line of the node in the text.
	Line int
}

// SubTopology is one `Sub-topology: N` block.
type SubTopology struct {
	ID int
	// Global is true for a global store block
	// ("Sub-topology: N for global store (will not generate tasks)").
	Global bool
	// Nodes are in text order.
	Nodes []*Node
	// Line is the 1-based line of the block header.
	Line int
}

// Topology is a parsed Topology#describe() text.
type Topology struct {
	SubTopologies []*SubTopology
}

// ParseError is a malformed describe() text; Line is 1-based.
type ParseError struct {
	Line int
	Msg  string
}

// Error implements error.
func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

var (
	reSubTopology = regexp.MustCompile(`^Sub-topology:\s*(\d+)(.*)$`)
	reSource      = regexp.MustCompile(`^Source:\s*(.+?)\s*\((topics|topicPattern):\s*(.*)\)$`)
	reProcessor   = regexp.MustCompile(`^Processor:\s*(.+?)\s*\(stores:\s*(.*)\)$`)
	reSink        = regexp.MustCompile(`^Sink:\s*(.+?)\s*\((topic|extractor class):\s*(.*)\)$`)
)

// ParseTopology parses the text printed by Kafka Streams'
// Topology#describe() (the toString format of InternalTopologyBuilder,
// identical in 3.x and 4.x). Indentation, blank lines and Windows line
// endings do not matter. Lines before the `Topologies:` header (for example
// log prefixes) are ignored; every line after it must belong to the
// topology. Errors are *ParseError and name the line.
func ParseTopology(r io.Reader) (*Topology, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	t := &Topology{}
	var (
		started bool
		cur     *SubTopology
		last    *Node
		lineNo  int
	)
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if !started {
			if i := strings.Index(line, "Topologies:"); i >= 0 {
				started = true
				if rest := strings.TrimSpace(line[i+len("Topologies:"):]); rest != "" {
					return nil, &ParseError{lineNo, fmt.Sprintf("unexpected text after \"Topologies:\": %q", rest)}
				}
				continue
			}
			if strings.HasPrefix(line, "Sub-topology:") {
				started = true // header missing: accept a paste starting at the first block
			} else {
				continue
			}
		}
		if line == "" {
			continue
		}
		switch {
		case strings.HasPrefix(line, "Sub-topology:"):
			m := reSubTopology.FindStringSubmatch(line)
			if m == nil {
				return nil, &ParseError{lineNo, fmt.Sprintf("malformed sub-topology header %q", line)}
			}
			id, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, &ParseError{lineNo, fmt.Sprintf("sub-topology number %q: %v", m[1], err)}
			}
			rest := strings.TrimSpace(m[2])
			global := false
			switch {
			case rest == "":
			case strings.HasPrefix(rest, "for global store"):
				global = true
			default:
				return nil, &ParseError{lineNo, fmt.Sprintf("unexpected text after sub-topology number: %q", rest)}
			}
			cur = &SubTopology{ID: id, Global: global, Line: lineNo}
			t.SubTopologies = append(t.SubTopologies, cur)
			last = nil
		case strings.HasPrefix(line, "Source:"), strings.HasPrefix(line, "Processor:"), strings.HasPrefix(line, "Sink:"):
			if cur == nil {
				return nil, &ParseError{lineNo, "node before any \"Sub-topology:\" header"}
			}
			n, err := parseNode(line)
			if err != nil {
				return nil, &ParseError{lineNo, err.Error()}
			}
			n.Line = lineNo
			cur.Nodes = append(cur.Nodes, n)
			last = n
		case strings.HasPrefix(line, "-->"), strings.HasPrefix(line, "<--"):
			if last == nil {
				return nil, &ParseError{lineNo, fmt.Sprintf("%q does not follow a node", line[:3])}
			}
			names := parseList(strings.TrimSpace(line[3:]), true)
			if line[:3] == "-->" {
				if last.Kind == Sink {
					return nil, &ParseError{lineNo, fmt.Sprintf("sink %s cannot have successors", last.Name)}
				}
				last.Successors = append(last.Successors, names...)
			} else {
				if last.Kind == Source {
					return nil, &ParseError{lineNo, fmt.Sprintf("source %s cannot have predecessors", last.Name)}
				}
				last.Predecessors = append(last.Predecessors, names...)
			}
		default:
			return nil, &ParseError{lineNo, fmt.Sprintf("unrecognised line %q (expected Sub-topology:, Source:, Processor:, Sink:, --> or <--)", truncate(line, 80))}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading topology text at line %d: %w", lineNo+1, err)
	}
	if !started {
		return nil, &ParseError{lineNo + 1, "no \"Topologies:\" header: this is not Topology#describe() output"}
	}
	if len(t.SubTopologies) == 0 {
		return nil, &ParseError{lineNo + 1, "no sub-topologies"}
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// parseNode parses a `Source:`, `Processor:` or `Sink:` line.
func parseNode(line string) (*Node, error) {
	switch {
	case strings.HasPrefix(line, "Source:"):
		m := reSource.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("malformed source %q (expected \"Source: NAME (topics: [t1, t2])\")", truncate(line, 80))
		}
		n := &Node{Kind: Source, Name: m[1]}
		val := strings.TrimSpace(m[3])
		if m[2] == "topics" && strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
			n.Topics = parseList(val[1:len(val)-1], false)
			if len(n.Topics) == 0 {
				return nil, fmt.Errorf("source %s reads no topics", n.Name)
			}
		} else {
			if val == "" {
				return nil, fmt.Errorf("source %s has an empty topic pattern", n.Name)
			}
			n.Pattern = val
		}
		return n, nil
	case strings.HasPrefix(line, "Processor:"):
		m := reProcessor.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("malformed processor %q (expected \"Processor: NAME (stores: [s1])\")", truncate(line, 80))
		}
		val := strings.TrimSpace(m[2])
		if !strings.HasPrefix(val, "[") || !strings.HasSuffix(val, "]") {
			return nil, fmt.Errorf("processor %s: stores %q are not a [list]", m[1], val)
		}
		return &Node{Kind: Processor, Name: m[1], Stores: parseList(val[1:len(val)-1], false)}, nil
	default:
		m := reSink.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("malformed sink %q (expected \"Sink: NAME (topic: t)\")", truncate(line, 80))
		}
		n := &Node{Kind: Sink, Name: m[1]}
		val := strings.TrimSpace(m[3])
		if val == "" {
			return nil, fmt.Errorf("sink %s has an empty %s", n.Name, m[2])
		}
		if m[2] == "topic" {
			n.Topics = []string{val}
		} else {
			n.Extractor = val
		}
		return n, nil
	}
}

// parseList splits "a, b" into names; "none" (for neighbour lists) and ""
// are empty.
func parseList(s string, noneIsEmpty bool) []string {
	s = strings.TrimSpace(s)
	if s == "" || (noneIsEmpty && s == "none") {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// check verifies that names are unique, that every neighbour exists in the
// same sub-topology and that the `-->` and `<--` lists agree.
func (t *Topology) check() error {
	seen := map[string]*Node{}
	for _, st := range t.SubTopologies {
		local := map[string]*Node{}
		for _, n := range st.Nodes {
			if prev, ok := seen[n.Name]; ok {
				return &ParseError{n.Line, fmt.Sprintf("node %s is already defined at line %d", n.Name, prev.Line)}
			}
			seen[n.Name] = n
			local[n.Name] = n
		}
		for _, n := range st.Nodes {
			for _, s := range n.Successors {
				m, ok := local[s]
				if !ok {
					return &ParseError{n.Line, fmt.Sprintf("%s %s: successor %s is not in sub-topology %d", n.Kind, n.Name, s, st.ID)}
				}
				if !slices.Contains(m.Predecessors, n.Name) {
					return &ParseError{m.Line, fmt.Sprintf("%s %s does not list %s as a predecessor, but %s lists it as a successor (line %d)", m.Kind, m.Name, n.Name, n.Name, n.Line)}
				}
			}
			for _, p := range n.Predecessors {
				m, ok := local[p]
				if !ok {
					return &ParseError{n.Line, fmt.Sprintf("%s %s: predecessor %s is not in sub-topology %d", n.Kind, n.Name, p, st.ID)}
				}
				if !slices.Contains(m.Successors, n.Name) {
					return &ParseError{m.Line, fmt.Sprintf("%s %s does not list %s as a successor, but %s lists it as a predecessor (line %d)", m.Kind, m.Name, n.Name, n.Name, n.Line)}
				}
			}
		}
	}
	return nil
}

// Node returns the node called name and its sub-topology, or nil.
func (t *Topology) Node(name string) (*Node, *SubTopology) {
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			if n.Name == name {
				return n, st
			}
		}
	}
	return nil, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
