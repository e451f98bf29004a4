package secure

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// The SCRAM-SHA-512 users of the secured cluster.
const (
	auditUser, auditPassword     = "lossaudit", "lossaudit-secret-9f2c"
	streamsUser, streamsPassword = "streams", "streams-secret-4b7e"
)

// outcome is one lossaudit run.
type outcome struct {
	code           int
	stdout, stderr string
	dir            string // the run's store and reports
}

// lastLine is the last non-empty line of the run's stderr.
func (o outcome) lastLine() string {
	lines := strings.Split(strings.TrimSpace(o.stderr), "\n")
	return lines[len(lines)-1]
}

// rows reads the run's CSV loss report (rowsOf).
func (o outcome) rows(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(o.dir, "loss-report.csv"))
	if err != nil {
		t.Fatalf("reading the loss report: %v", err)
	}
	return rowsOf(t, b)
}

// rowsOf reads a CSV loss report as "kind stage/input/key", one row per
// (kind, stage, key) at the output (whatever input it names).
func rowsOf(t *testing.T, report []byte) []string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(string(report))).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("reading the loss report: %v\n%s", err, report)
	}
	var out []string
	for _, r := range recs[1:] {
		in := r[2]
		if r[1] == "output" {
			in = ""
		}
		if s := r[0] + " " + r[1] + "/" + in + "/" + r[3]; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// TestSecuredCluster runs lossaudit on a secured Kafka cluster (SASL_SSL
// with SCRAM-SHA-512, a mutual-TLS listener, the StandardAuthorizer with
// allow.everyone.if.no.acl.found=false) as User:lossaudit holding exactly
// the ACLs of docs/security.md's kafka-acls.sh commands, applied as
// written there. Two pipelines of the Kafka Streams test application run
// with its own principal (User:streams): one clean, one with injected
// loss. audit and reconcile report zero findings on the clean one and
// exactly the injected records on the other; topology and scan see every
// topic; audit also passes over mutual TLS. Then the brokers' authorizer
// logs show no operation denied to User:lossaudit. Last, each documented
// grant removed in turn makes every command that needs it fail, exit 2 or
// 3, naming the refused permission and the resource: never a verdict,
// never a hang.
func TestSecuredCluster(t *testing.T) {
	kafka.SkipUnlessAvailable(t)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()

	type built struct {
		bin string
		err error
	}
	binc := make(chan built, 1)
	go func() {
		bin := filepath.Join(dir, "lossaudit")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/lossaudit/lossaudit/cmd/lossaudit").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build: %v\n%s", err, out)
		}
		binc <- built{bin, err}
	}()

	c, err := kafka.Start(ctx, kafka.Options{Version: Version, Dir: filepath.Join(dir, "kafka"),
		Security: &kafka.Security{SCRAM: map[string]string{auditUser: auditPassword, streamsUser: streamsPassword}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("kafka node %d log tail (%s):\n%s", n.ID, n.LogFile, c.LogTail(n.ID, 25))
			}
		}
		c.Close()
	})
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("secured Kafka %s up after %v: SASL_SSL %v, mutual TLS %v", c.Version(), time.Since(t0).Round(time.Second), c.Bootstrap(), c.BootstrapMTLS())
	adm, err := c.NewAdmin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	// The application's principal may do anything but administer the cluster.
	for _, g := range []Grant{
		{Principal: "User:" + streamsUser, Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Ops: []kmsg.ACLOperation{kmsg.ACLOperationAll}},
		{Principal: "User:" + streamsUser, Resource: kmsg.ACLResourceTypeGroup, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Ops: []kmsg.ACLOperation{kmsg.ACLOperationAll}},
		{Principal: "User:" + streamsUser, Resource: kmsg.ACLResourceTypeTransactionalId, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Ops: []kmsg.ACLOperation{kmsg.ACLOperationAll}},
	} {
		if err := SetGrant(ctx, adm.Client(), g, true); err != nil {
			t.Fatal(err)
		}
	}
	props := filepath.Join(dir, "streams.properties")
	if err := ClientProperties(props, c.CAFile(), streamsUser, streamsPassword); err != nil {
		t.Fatal(err)
	}

	clean, lossy := NewPipeline("sec-clean", dir), NewPipeline("sec-loss", dir)
	lossy.DropBeforeStore = map[string][]string{"b": {"cust-005"}}
	lossy.DropBeforeOutput = []string{"cust-007"}
	start := time.Now()
	errc := make(chan error, 2)
	for _, p := range []*Pipeline{clean, lossy} {
		go func() { errc <- p.Run(ctx, c, adm, props, 300) }()
	}
	if err := errors.Join(<-errc, <-errc); err != nil {
		t.Fatal(err)
	}
	t.Logf("both pipelines processed %d records per input after %v: %s %v, %s %v", 300, time.Since(start).Round(time.Second),
		clean.App, clean.Timings, lossy.App, lossy.Timings)
	if len(clean.Truth.Drops) != 0 || len(clean.Truth.ThreadsReplaced) != 0 {
		t.Fatalf("ground truth of the clean pipeline: drops %v, threads replaced %v", clean.Truth.Drops, clean.Truth.ThreadsReplaced)
	}
	if len(lossy.Truth.Drops) == 0 {
		t.Fatal("the lossy pipeline dropped nothing: the scenario proves nothing")
	}
	want := lossy.Injected()
	if len(want) != 2 {
		t.Fatalf("the injection should cause 2 findings, the ledger says %v", want)
	}
	// compare's pair: the harness copies the first input, leaving three
	// records of partition 0 out of the lossy pipeline's copy.
	if _, err := CopyTopic(ctx, c, adm, clean.Inputs[0], clean.Copy, nil); err != nil {
		t.Fatal(err)
	}
	left := 0
	skipped, err := CopyTopic(ctx, c, adm, lossy.Inputs[0], lossy.Copy, func(r *kgo.Record) bool {
		if r.Partition == 0 && left < 3 {
			left++
			return true
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	var wantCompare []string
	for _, k := range skipped {
		wantCompare = append(wantCompare, "missing sink/copy/"+k)
	}
	slices.Sort(wantCompare)

	// lossaudit's principal gets the documented ACLs, as the doc writes them.
	tb, err := kafka.TestbedDir()
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(filepath.Dir(tb), "docs", "security.md")
	cmds, err := DocACLCommands(doc, "The exact commands")
	if err != nil {
		t.Fatal(err)
	}
	grants := map[*Pipeline][]Grant{}
	for _, p := range []*Pipeline{clean, lossy} {
		gs, err := ParseACLCommands(cmds, map[string]string{"myapp": p.App, "myapp-": p.App + "-", "orders": p.Inputs[0],
			"customers": p.Inputs[1], "payments": p.Inputs[2], "enriched-orders": p.Output, "_schemas": p.SchemasTopic, "dr.orders": p.Copy})
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		for _, g := range gs {
			if g.Principal != "User:"+auditUser {
				t.Fatalf("%s grants %s, not lossaudit's principal", doc, g)
			}
			if err := SetGrant(ctx, adm.Client(), g, true); err != nil {
				t.Fatal(err)
			}
		}
		grants[p] = gs
	}

	b := <-binc
	if b.err != nil {
		t.Fatal(b.err)
	}
	runs := 0
	lossaudit := func(t *testing.T, p *Pipeline, name string, mtls bool, args ...string) outcome {
		t.Helper()
		runs++
		o := outcome{dir: filepath.Join(dir, "runs", fmt.Sprintf("%03d-%s", runs, name))}
		cfg, err := auditConfig(c, p, o.dir, mtls)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(rctx, b.bin, append(args, "-c", cfg)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		o.stdout, o.stderr = stdout.String(), stderr.String()
		var exit *exec.ExitError
		switch {
		case rctx.Err() != nil:
			t.Fatalf("lossaudit %v: still running after two minutes\nstderr: %s", args, o.stderr)
		case errors.As(err, &exit):
			o.code = exit.ExitCode()
		case err != nil:
			t.Fatalf("lossaudit %v: %v", args, err)
		}
		return o
	}

	// The scenarios: a clean run and an injected loss.
	for _, p := range []*Pipeline{clean, lossy} {
		wantRows, wantCompareRows, wantCode := []string(nil), []string(nil), 0
		if p == lossy {
			wantRows, wantCompareRows, wantCode = want, wantCompare, 1
		}
		for _, cmd := range []string{"audit", "reconcile", "compare"} {
			t.Run(cmd+" "+p.App, func(t *testing.T) {
				o := lossaudit(t, p, cmd+"-"+p.App, false, cmd)
				if o.code != wantCode {
					t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", o.code, wantCode, o.stdout, o.stderr)
				}
				w := wantRows
				if cmd == "compare" {
					w = wantCompareRows
				}
				if got := o.rows(t); !slices.Equal(got, w) {
					t.Errorf("the loss report names\n%v\nthe injection\n%v", got, w)
				}
			})
		}
		t.Run("watch "+p.App, func(t *testing.T) {
			report, failed := watch(t, ctx, b.bin, c, p, filepath.Join(dir, "runs", "watch-"+p.App))
			if failed != "" {
				t.Fatalf("watch's first step failed: %s", failed)
			}
			if got := rowsOf(t, report); !slices.Equal(got, wantRows) {
				t.Errorf("watch's first step names\n%v\nthe injection\n%v", got, wantRows)
			}
		})
		t.Run("topology "+p.App, func(t *testing.T) {
			o := lossaudit(t, p, "topology-"+p.App, false, "topology")
			if o.code != 0 || strings.Contains(o.stdout, "MISSING") || strings.Contains(o.stdout, "DENIED") {
				t.Fatalf("exit %d, want 0 with every topic found\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
			}
			for _, topic := range p.Topics() {
				if !strings.Contains(o.stdout, topic) {
					t.Errorf("topology does not show %s:\n%s", topic, o.stdout)
				}
			}
		})
		t.Run("scan "+p.App, func(t *testing.T) {
			o := lossaudit(t, p, "scan-"+p.App, false, "scan")
			if o.code != 0 {
				t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
			}
			for _, topic := range p.Topics() {
				if !strings.Contains(o.stdout, topic) {
					t.Errorf("scan does not show %s:\n%s", topic, o.stdout)
				}
			}
		})
	}
	t.Run("audit over mutual TLS", func(t *testing.T) {
		o := lossaudit(t, lossy, "audit-mtls", true, "audit")
		if o.code != 1 {
			t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
		}
		if got := o.rows(t); !slices.Equal(got, want) {
			t.Errorf("the loss report names\n%v\nthe injection\n%v", got, want)
		}
	})

	// Nothing lossaudit did was refused.
	authLog, err := c.AuthorizerLog()
	if err != nil {
		t.Fatal(err)
	}
	if denied := deniedTo(authLog, "User:"+auditUser); len(denied) > 0 {
		t.Errorf("the authorizer denied %d operations to User:%s:\n%s", len(denied), auditUser, strings.Join(denied[:min(20, len(denied))], "\n"))
	}
	scenarios := time.Since(t0)

	// Each grant removed in turn, and then, of a grant of Read and
	// Describe, Read alone (Describe stays: Read implies it, so removing
	// Describe alone changes nothing).
	var removals []Grant
	for _, g := range grants[clean] {
		removals = append(removals, g)
		if slices.Contains(g.Ops, kmsg.ACLOperationRead) && slices.Contains(g.Ops, kmsg.ACLOperationDescribe) {
			r := g
			r.Ops = []kmsg.ACLOperation{kmsg.ACLOperationRead}
			removals = append(removals, r)
		}
	}
	for _, g := range removals {
		readOnly := len(g.Ops) == 1 && g.Ops[0] == kmsg.ACLOperationRead
		perm := "DESCRIBE"
		if readOnly {
			perm = "READ"
		}
		if err := SetGrant(ctx, adm.Client(), g, false); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"audit", "reconcile", "scan", "topology", "compare"} {
			t.Run(cmd+" without "+g.String(), func(t *testing.T) {
				o := lossaudit(t, clean, cmd+"-without", false, cmd)
				if slices.Contains(g.Ops, kmsg.ACLOperationDescribeConfigs) {
					// Recommended, not needed: the changelogs' cleanup.policy
					// cross-check warns, naming the permission, and goes on.
					if o.code != 0 {
						t.Fatalf("exit %d without %s, want 0\nstdout: %s\nstderr: %s", o.code, g, o.stdout, o.stderr)
					}
					if out := o.stdout + o.stderr; (cmd == "audit" || cmd == "reconcile") && !strings.Contains(out, "DESCRIBE_CONFIGS") {
						t.Errorf("no warning naming DESCRIBE_CONFIGS without %s\nstdout: %s\nstderr: %s", g, o.stdout, o.stderr)
					}
					return
				}
				if o.code == 0 || o.code == 1 {
					if !needs(cmd, g, clean) || readOnly && cmd == "topology" {
						return
					}
					t.Fatalf("exit %d without %s: a verdict without the permission\nstdout: %.600s\nstderr: %s", o.code, g, o.stdout, o.stderr)
				}
				t.Logf("exit %d: %s", o.code, o.lastLine())
				if o.code != 2 && o.code != 3 {
					t.Errorf("exit %d, want 2 or 3\nstderr: %s", o.code, o.stderr)
				}
				last := o.lastLine()
				if !strings.Contains(strings.ToLower(last), "authorization failed") || !strings.Contains(last, perm) ||
					!strings.Contains(last, strings.TrimSuffix(g.Name, "-")) {
					t.Errorf("the error does not name the refused permission (%s) and %q:\n%s", perm, g.Name, last)
				}
			})
		}
		if needs("watch", g, clean) && !readOnly && !slices.Contains(g.Ops, kmsg.ACLOperationDescribeConfigs) {
			t.Run("watch without "+g.String(), func(t *testing.T) {
				runs++
				_, failed := watch(t, ctx, b.bin, c, clean, filepath.Join(dir, "runs", fmt.Sprintf("%03d-watch-without", runs)))
				if failed == "" {
					t.Fatalf("watch completed a step without %s", g)
				}
				if !strings.Contains(strings.ToLower(failed), "authorization failed") || !strings.Contains(failed, strings.TrimSuffix(g.Name, "-")) {
					t.Errorf("the failed step does not name the refused permission and %q:\n%s", g.Name, failed)
				}
			})
		}
		if err := SetGrant(ctx, adm.Client(), g, true); err != nil {
			t.Fatal(err)
		}
	}
	// The removals were refused in the authorizer's log: the check above read the right log.
	if authLog, err = c.AuthorizerLog(); err != nil {
		t.Fatal(err)
	}
	denied := deniedTo(authLog, "User:"+auditUser)
	if len(denied) == 0 {
		t.Errorf("the authorizer logged no denied operation for User:%s even without its ACLs: the check of its log proves nothing", auditUser)
	} else {
		t.Logf("without its ACLs, the authorizer denied User:%s %d operations, e.g.\n%s", auditUser, len(denied), denied[0])
	}
	t.Logf("%d lossaudit runs; scenarios done after %v, everything after %v", runs, scenarios.Round(time.Second), time.Since(t0).Round(time.Second))
}

// needs reports whether cmd reads what g grants on pipeline p.
func needs(cmd string, g Grant, p *Pipeline) bool {
	switch cmd {
	case "audit", "reconcile", "watch":
		return g.Name != p.Copy // the values are Avro: the schemas too
	case "scan":
		return g.Name != p.SchemasTopic && g.Name != p.Copy // the group's offsets too; schemas only with --decode
	case "compare":
		return g.Name == p.Inputs[0] || g.Name == p.Copy // match: record, no group
	}
	return g.Resource == kmsg.ACLResourceTypeTopic && g.Name != p.SchemasTopic && g.Name != p.Copy // topology: the pipeline's topics
}

// deniedTo returns the lines of the authorizer log that deny principal an operation.
func deniedTo(log, principal string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Principal = "+principal+" ") && strings.Contains(l, " is Denied ") {
			out = append(out, l)
		}
	}
	return out
}

// auditConfig writes the lossaudit configuration of p for one run in dir:
// User:lossaudit by SCRAM-SHA-512 on the SASL_SSL listener, or by its
// certificate on the mutual-TLS listener.
func auditConfig(c *kafka.Cluster, p *Pipeline, dir string, mtls bool) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var b strings.Builder
	brokers := c.Bootstrap()
	if mtls {
		brokers = c.BootstrapMTLS()
	}
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  retry_timeout: 20s\n  tls:\n    enabled: true\n    ca_file: %q\n", strings.Join(brokers, ", "), c.CAFile())
	if mtls {
		cert, key, err := c.ClientCert(auditUser)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "    cert_file: %q\n    key_file: %q\n", cert, key)
	} else {
		fmt.Fprintf(&b, "  sasl:\n    mechanism: SCRAM-SHA-512\n    username: %s\n    password: %s\n", auditUser, auditPassword)
	}
	fmt.Fprintf(&b, "schema:\n  schemas_topic: %q\n", p.SchemasTopic)
	fmt.Fprintf(&b, "pipeline:\n  application_id: %q\n  topology_file: %q\n  output: %q\n  join: left\n  reduce: plain\n  inputs:\n", p.App, p.TopologyFile, p.Output)
	for i, in := range p.Inputs {
		fmt.Fprintf(&b, "    - {name: %s, topic: %q, rekey: customerId, key_format: string}\n", []string{"a", "b", "c"}[i], in)
	}
	fmt.Fprintf(&b, "compare:\n  pairs:\n    - {name: copy, source: %q, sink: %q}\n  grace: 1s\n", p.Inputs[0], p.Copy)
	fmt.Fprintf(&b, "store:\n  dir: %q\nreport:\n  csv: %q\n  json: %q\n", filepath.Join(dir, "store"), filepath.Join(dir, "loss-report.csv"), filepath.Join(dir, "report.json"))
	path := filepath.Join(dir, "lossaudit.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// watch runs `lossaudit watch` on p until its first step has completed,
// and returns the loss report it then serves, or until a step has failed,
// and returns the line it logged (then /report.json and /healthz must
// not answer 200: no verdict, not healthy). It stops watch with SIGTERM.
func watch(t *testing.T, ctx context.Context, bin string, c *kafka.Cluster, p *Pipeline, dir string) (report []byte, failed string) {
	t.Helper()
	cfg, err := auditConfig(c, p, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(dir, "watch.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	out := logText(logf.Name())
	cmd := exec.Command(bin, "watch", "-c", cfg, "--interval", "5s", "--listen", addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 143) {
				t.Errorf("watch ended with %v after SIGTERM\n%s", err, out.String())
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("watch did not stop within a minute of SIGTERM\n%s", out.String())
		}
	}()
	get := func(path string) ([]byte, int, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp.StatusCode, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, code, err := get("/report.json"); err == nil && code == http.StatusOK {
			b, code, err := get("/loss-report.csv")
			if err != nil || code != http.StatusOK {
				t.Fatalf("GET /loss-report.csv: %d %v", code, err)
			}
			return b, ""
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "step failed") {
				for _, path := range []string{"/report.json", "/healthz"} {
					if _, code, err := get(path); err != nil || code == http.StatusOK {
						t.Errorf("GET %s after a failed step: %d %v", path, code, err)
					}
				}
				return nil, l
			}
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("watch exited before its first step completed: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("watch: %v\n%s", ctx.Err(), out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch completed no step within two minutes\n%s", out.String())
		}
	}
}

// logText reads a log file when printed (fmt's Stringer).
type logText string

// String returns the file's content, or why it cannot be read.
func (l logText) String() string {
	b, err := os.ReadFile(string(l))
	if err != nil {
		return err.Error()
	}
	return string(b)
}
