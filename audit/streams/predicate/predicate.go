// Package predicate compiles and evaluates the declared predicates of
// Kafka Streams filters (pipeline.nodes[i].predicate, docs/topology.md
// "Declared filters and re-keys"): CEL expressions (cel.dev/cel-go) over
// the record's decoded value, `value` (an Avro record as a map of its
// fields), and its key, `key` (a string, or null).
//
// CEL rather than a hand-written parser: it is typed (the expression is
// checked when the configuration is validated), sandboxed and free of side
// effects, evaluates in time linear in the expression (comprehensions are
// bounded here by a cost limit), and is maintained by Google and used by
// Kubernetes for admission rules, so its semantics are documented and
// stable.
package predicate

import (
	"errors"
	"fmt"

	"cel.dev/cel-go/cel"
)

// costLimit bounds one evaluation (CEL's cost units: about one per
// operation); an expression that exceeds it is an evaluation error, so
// its record is uncertain.
const costLimit = 1_000_000

// Predicate is a compiled filter predicate; safe for concurrent use.
type Predicate struct {
	src    string
	negate bool
	prg    cel.Program
}

// env is the one CEL environment of predicates: value a map of dynamic
// values, key a string (null for a null key).
func env() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("value", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("key", cel.StringType),
	)
}

// Compile parses and type-checks expr. negate makes the predicate
// filterNot's: a record passes when expr is false. The expression must
// be of type bool (or dyn, checked per record).
func Compile(expr string, negate bool) (*Predicate, error) {
	if expr == "" {
		return nil, errors.New("empty predicate")
	}
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("predicate environment: %w", err)
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("the predicate is of type %s, not bool", t)
	}
	prg, err := e.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, fmt.Errorf("predicate %q: %w", expr, err)
	}
	return &Predicate{src: expr, negate: negate, prg: prg}, nil
}

// String returns the expression, with "not " before it for filterNot.
func (p *Predicate) String() string {
	if p.negate {
		return "not (" + p.src + ")"
	}
	return p.src
}

// Eval says whether a record with this key (nil for null) and decoded
// value passes the filter. An error (a missing field, a null where a
// number is compared, a value that is not a record, a non-bool result,
// the cost limit) means the predicate cannot be evaluated on the record:
// the caller must not guess.
func (p *Predicate) Eval(key []byte, value any) (bool, error) {
	m, ok := value.(map[string]any)
	if !ok {
		return false, fmt.Errorf("the value is %T, not a record", value)
	}
	var k any
	if key != nil {
		k = string(key)
	}
	out, _, err := p.prg.Eval(map[string]any{"value": m, "key": k})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the predicate gave %v (%s), not a bool", out.Value(), out.Type())
	}
	return b != p.negate, nil
}
