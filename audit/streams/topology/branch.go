package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// KindBranchChild is the pass-through node Kafka Streams puts after a
// branch node for each branch (BranchedKStreamImpl#createBranch,
// KStreamImpl#doBranch: a PassThrough processor). It is recognised by its
// position, a successor of a branch node, never declared.
const KindBranchChild Kind = "branch-child"

// FromBranch: the successor of a branch node.
const FromBranch KindOrigin = "position after a branch node"

// BranchDecl is the declaration of a branch node (pipeline.nodes[Index]
// with kind branch and its branches).
type BranchDecl struct {
	// Index is the entry's position in pipeline.nodes.
	Index int
	// Branches are the node's branches in the order the application
	// declares them (the order KStreamBranch tests their predicates).
	Branches []BranchChild
}

// BranchChild is one declared branch: its child node and its predicate,
// or Default for defaultBranch().
type BranchChild struct {
	Name      string
	Predicate string
	Default   bool
}

// BranchRoute is where one branch of a branch node on an input's path
// leads: the topics its records reach (none: they are dropped).
type BranchRoute struct {
	// Node is the branch node, Child the branch's child node.
	Node, Child string
	// Index is the branch's position in the declaration; Default marks
	// the default branch.
	Index   int
	Default bool
	// Topics are the topics the branch's records reach, sorted.
	Topics []string
}

// deprecatedChild matches the generated name of a child of the
// deprecated branch(Predicate...) (KStreamImpl#doBranch,
// BRANCHCHILD_NAME): the builder's counter, in predicate order.
var deprecatedChild = regexp.MustCompile(`^KSTREAM-BRANCHCHILD-(\d{10})$`)

// checkBranches checks each declared branch node against the graph:
// the node is a branch (by its generated name or declared so), its
// successors are exactly the declared children, each child has the
// branch node as its only predecessor, and the declared order agrees
// with what the children's generated names show: split() names an
// unnamed branch <split name><index> (1 for the first predicate, 0 for
// the default branch), the deprecated branch() KSTREAM-BRANCHCHILD-<n>
// with n increasing in predicate order, or <name>-predicate-<index>
// (0-based), and has no default branch. On success the children are
// classified KindBranchChild in kinds (describe() prints them in
// successor order: subtree size, then name; not the declaration's).
// Every branch node, declared or not, has its successors classified so.
func (t *Topology) checkBranches(kinds map[string]Classified, decls Declarations) error {
	decl := decls.Branches
	var order []string
	for n := range decl {
		order = append(order, n)
	}
	slices.SortFunc(order, func(a, b string) int { return decl[a].Index - decl[b].Index })
	for _, n := range order {
		d := decl[n]
		c, ok := kinds[n]
		if !ok {
			continue // Classify names the unknown node
		}
		fail := func(field, msg string) error {
			return &DeclarationError{Index: d.Index, Field: field, Node: n, Msg: msg}
		}
		if c.Kind != KindBranch {
			return fail("branches", fmt.Sprintf("node %s is a %s (its %s, line %d), not a branch node", n, c.Kind, c.Origin, c.Node.Line))
		}
		if len(d.Branches) == 0 {
			return fail("branches", fmt.Sprintf("node %s is declared branch without its branches", n))
		}
		children := c.Node.Successors
		for j, b := range d.Branches {
			field := fmt.Sprintf("branches[%d].name", j)
			if !slices.Contains(children, b.Name) {
				msg := fmt.Sprintf("%q is no branch of %s; its children are %s", b.Name, n, strings.Join(children, ", "))
				if near := nearestName(b.Name, children); near != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", near)
				}
				return fail(field, msg)
			}
			if err := branchOrder(n, b, j, len(d.Branches)); err != "" {
				return fail(field, err)
			}
		}
		for _, ch := range children {
			if !slices.ContainsFunc(d.Branches, func(b BranchChild) bool { return b.Name == ch }) {
				return fail("branches", fmt.Sprintf("child %s of %s is not declared: declare every branch in the application's order, the default branch (if any) last", ch, n))
			}
		}
		// The deprecated branch(): its children's counter increases in
		// predicate order.
		last := -1
		for j, b := range d.Branches {
			if m := deprecatedChild.FindStringSubmatch(b.Name); m != nil {
				k, _ := strconv.Atoi(m[1])
				if k < last {
					return fail(fmt.Sprintf("branches[%d].name", j), fmt.Sprintf("%s was built before the branch declared before it (KSTREAM-BRANCHCHILD- numbers follow the predicates of branch()): the order is not the application's", b.Name))
				}
				last = k
			}
		}
	}
	// Every branch node's successors are its children.
	for _, c := range kinds {
		if c.Kind != KindBranch {
			continue
		}
		for _, s := range c.Node.Successors {
			ch, ok := kinds[s]
			if !ok {
				continue
			}
			if ch.Origin == FromDeclaration {
				return &DeclarationError{Index: declIndex(decls.Nodes, s), Field: "kind", Node: s,
					Msg: fmt.Sprintf("node %s is a branch of %s (line %d): declare it among %s's branches, not as a node", s, c.Node.Name, ch.Node.Line, c.Node.Name)}
			}
			if ch.Node.Kind != Processor || len(ch.Node.Predecessors) != 1 || len(ch.Node.Stores) != 0 {
				continue // not a branch's pass-through: left as it is
			}
			kinds[s] = Classified{ch.Node, KindBranchChild, FromBranch, nil}
		}
	}
	return nil
}

// checkDeclaredBranches checks the declared branch nodes against the
// graph (checkBranches) whether or not an input's path crosses them.
func (t *Topology) checkDeclaredBranches(decl Declarations) error {
	if len(decl.Branches) == 0 {
		return nil
	}
	kinds, err := t.Classify(decl.Nodes)
	if err != nil {
		return err
	}
	return t.checkBranches(kinds, decl)
}

// declIndex is the pipeline.nodes index of node n's declaration, 0 when
// it has none.
func declIndex(nodes []NodeDecl, n string) int {
	for i, d := range nodes {
		if strings.TrimSpace(d.Name) == n {
			return i
		}
	}
	return 0
}

// branchOrder checks branch j of n (of count) against what its name
// shows; "" when it agrees or shows nothing.
func branchOrder(n string, b BranchChild, j, count int) string {
	if rest, ok := strings.CutPrefix(b.Name, n); ok && rest != "" && strings.Trim(rest, "0123456789") == "" && len(rest) < 6 {
		// split(): <split name><index>, the default branch 0.
		k, _ := strconv.Atoi(rest)
		switch {
		case k == 0 && !b.Default:
			return fmt.Sprintf("%s is the name split() gives the default branch: declare it default: true", b.Name)
		case k != 0 && b.Default:
			return fmt.Sprintf("%s is the name split() gives branch %d, not the default branch", b.Name, k)
		case k != 0 && k != j+1:
			return fmt.Sprintf("%s is the name split() gives its branch %d, declared here as branch %d: declare the branches in the application's order", b.Name, k, j+1)
		}
		return ""
	}
	if rest, ok := strings.CutPrefix(b.Name, n+"-predicate-"); ok {
		// The deprecated branch(Named, ...): <name>-predicate-<index>.
		k, err := strconv.Atoi(rest)
		switch {
		case err != nil:
		case b.Default:
			return fmt.Sprintf("%s is a branch of the deprecated branch(), which has no default branch", b.Name)
		case k != j:
			return fmt.Sprintf("%s is the name the deprecated branch() gives its predicate %d, declared here as branch %d: declare the branches in the application's order", b.Name, k, j)
		}
		return ""
	}
	if deprecatedChild.MatchString(b.Name) && b.Default {
		return fmt.Sprintf("%s is a branch of the deprecated branch(), which has no default branch", b.Name)
	}
	return ""
}

// branchOps are the ops of the path into branch j of d: the record
// reaches it when every earlier predicate is false and its own is true
// (KStreamBranch forwards a record to the first branch whose predicate
// accepts it, else to the default branch, else nowhere). Replayed in
// this order, a predicate the application would not have evaluated is
// not evaluated either.
func branchOps(node string, d BranchDecl, j int) []StreamOp {
	var ops []StreamOp
	for k := 0; k < j; k++ {
		ops = append(ops, StreamOp{Op: OpFilter, Node: node, Predicate: d.Branches[k].Predicate, Negate: true})
	}
	if b := d.Branches[j]; !b.Default {
		ops = append(ops, StreamOp{Op: OpFilter, Node: node, Predicate: b.Predicate})
	}
	return ops
}

// branchTemplate is the declaration a branch node needs, for messages:
// its children in describe()'s order (not necessarily the
// application's).
func branchTemplate(n *Node) string {
	var parts []string
	for _, s := range n.Successors {
		parts = append(parts, fmt.Sprintf("{name: %s, predicate: '<CEL>'}", s))
	}
	return fmt.Sprintf("pipeline.nodes: [{name: %s, kind: branch, branches: [%s]}] with the branches in the order the application declares them (describe() does not print it) and the default branch, if any, last as {name: ..., default: true}", n.Name, strings.Join(parts, ", "))
}

// exclusive says whether two paths (the nodes from the input's source to
// a sink of one topic) can never both carry a copy of one record: where
// they part, a branch node forwards the record to one child only. Before
// that node both carry the same copy (same key, same value), so both
// branches' predicates see the same record.
func exclusive(kinds map[string]Classified, a, b []string) (bool, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == 0 || i == len(a) || i == len(b) {
		return false, ""
	}
	part := a[i-1]
	return kinds[part].Kind == KindBranch, part
}

// exclusivePaths checks that the paths of input in to topic out (the
// nodes of each) are pairwise exclusive (exclusive): else a record may be
// written more than once.
func (t *Topology) exclusivePaths(kinds map[string]Classified, in StreamInput, out string, trails [][]string) error {
	branched := false
	for _, tr := range trails {
		if slices.ContainsFunc(tr, func(n string) bool { return kinds[n].Kind == KindBranch }) {
			branched = true
		}
	}
	n := len(trails)
	for i := range trails {
		for j := i + 1; j < len(trails); j++ {
			ok, part := exclusive(kinds, trails[i], trails[j])
			if ok {
				continue
			}
			if !branched || part == "" {
				return fmt.Errorf("line %d: input topic %s reaches topic %s by %d paths: each record is written %d times, and a per-record stage expects one copy", in.Line, in.Topic, out, n, n)
			}
			line := 0
			if c, ok := kinds[part]; ok {
				line = c.Node.Line
			}
			return fmt.Errorf("line %d: input topic %s reaches topic %s by %d paths, and two of them part at node %s (line %d), which forwards each record to both, not at a branch: such a record is written twice, and a per-record stage expects one copy", in.Line, in.Topic, out, n, part, line)
		}
	}
	return nil
}

// branchRoutes lists, for each branch node met on an input's way, where
// each of its declared branches leads: the topics of the paths through
// the branch's child (trails: topic -> the nodes of each path to it).
func branchRoutes(nodes []*Node, decl map[string]BranchDecl, trails map[string][][]string) []BranchRoute {
	var out []BranchRoute
	for _, n := range nodes {
		for j, b := range decl[n.Name].Branches {
			r := BranchRoute{Node: n.Name, Child: b.Name, Index: j, Default: b.Default}
			for tp, trs := range trails {
				if slices.ContainsFunc(trs, func(tr []string) bool { return slices.Contains(tr, b.Name) }) {
					r.Topics = append(r.Topics, tp)
				}
			}
			slices.Sort(r.Topics)
			out = append(out, r)
		}
	}
	return out
}
