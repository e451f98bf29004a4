// Package detect holds every detector of lossaudit: one function per
// anomaly family, from structured inputs (what the snapshot and the reads
// showed) to structured findings (finding.Row, finding.PartitionFinding,
// finding.Inconclusive). Detectors do no I/O and write no words for users;
// each says in its doc comment what proves the anomaly it reports. They are
// shared by every mode of the engine (the one-shot audit, the incremental
// reconciliation), so a finding means the same wherever it comes from.
package detect
