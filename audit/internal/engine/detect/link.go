package detect

// linkPending is the rule of a link stage (a repartition topic): input x's
// record r is pending at the second hop, not lost, when the link's
// unprocessed tail (AddTail) holds a record with its timestamp and value
// fingerprint. Selecting the key is deterministic, so the copy has the
// same key by construction.
func (e *KeyEvidence) linkPending(x int, r InputRecord) bool {
	_, pending := e.tails[x][recID{r.TS, r.FP}]
	return pending
}
