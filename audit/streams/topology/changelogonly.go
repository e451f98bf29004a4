package topology

// changelogOnly says whether the table op n of the only input ends the
// topology: nothing reads the table (describe() prints `--> none`), so
// the table's changelog is the pipeline's last stage and no output is
// audited. With several inputs the tables are joined into an output.
func changelogOnly(inputs []string, n *Node) bool {
	return len(inputs) == 1 && len(n.Successors) == 0
}
