package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// aclSpec is one ACL of docs/security.md's list.
type aclSpec struct {
	what     string // as the test names it
	resource kmsg.ACLResourceType
	name     string
	pattern  kmsg.ACLResourcePatternType
	op       kmsg.ACLOperation
}

// TestLeastPrivilege runs the commands as a principal holding only the
// ACLs docs/security.md lists, on an in-process cluster that enforces ACLs:
// each command gives the same verdict and reports as under a superuser;
// then each ACL is removed in turn, and every command that needs it fails
// with exit 2 or 3 naming what is missing, never a hang and never a
// verdict.
//
// This is kfake's authorizer; testbed/secure's TestSecuredCluster runs the
// same commands on real brokers with Kafka's StandardAuthorizer.
func TestLeastPrivilege(t *testing.T) {
	clearEnv(t)
	const app = "acl"
	brokers, truth := saslPipeline(t, app, kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-512", "admin", "admin-pw"),
		kfake.User("SCRAM-SHA-512", "lossaudit", "lossaudit-pw"))
	var acls []aclSpec
	for _, topic := range []string{truth.Inputs[0].Topic, truth.Output} {
		acls = append(acls, aclSpec{"read " + topic, kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead})
	}
	for _, in := range truth.Inputs[1:] {
		acls = append(acls, aclSpec{"read " + in.Topic, kmsg.ACLResourceTypeTopic, in.Topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead})
	}
	acls = append(acls,
		aclSpec{"read the internal topics " + app + "-*", kmsg.ACLResourceTypeTopic, app + "-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead},
		aclSpec{"describe the group " + app, kmsg.ACLResourceTypeGroup, app, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe},
		aclSpec{"read the schemas topic", kmsg.ACLResourceTypeTopic, truth.SchemasTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead},
	)
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	setACL := func(a aclSpec, add bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if add {
			req := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = a.resource, a.name, a.pattern
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:lossaudit", "*", a.op, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
			resp, err := req.RequestWith(ctx, admin)
			if err == nil && resp.Results[0].ErrorCode != 0 {
				err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
			}
			if err != nil {
				t.Fatalf("adding ACL %s: %v", a.what, err)
			}
			return
		}
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		name, principal, host := a.name, "User:lossaudit", "*"
		f.ResourceType, f.ResourceName, f.ResourcePatternType = a.resource, &name, a.pattern
		f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, a.op, kmsg.ACLPermissionTypeAllow
		req.Filters = append(req.Filters, f)
		resp, err := req.RequestWith(ctx, admin)
		if err == nil && (resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 1) {
			t.Fatalf("removing ACL %s: code %d, %d matching", a.what, resp.Results[0].ErrorCode, len(resp.Results[0].MatchingACLs))
		}
		if err != nil {
			t.Fatalf("removing ACL %s: %v", a.what, err)
		}
	}
	for _, a := range acls {
		setACL(a, true)
	}

	dir := t.TempDir()
	sasl := func(user, pass string) string {
		return "    mechanism: SCRAM-SHA-512\n    username: " + user + "\n    password: " + pass + "\n"
	}
	commands := []string{"audit", "compare", "scan", "topology", "reconcile"}
	runCmd := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		code := execute(ctx, newTestRootCmd(&stdout, &stderr), args, &stderr)
		if ctx.Err() != nil {
			t.Fatalf("%v: still running after two minutes", args)
		}
		return code, stdout.String(), stderr.String()
	}
	readReport := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name, "loss-report.csv"))
		return string(b)
	}

	// With every ACL: the same verdict and loss report as the superuser.
	for _, cmd := range commands {
		t.Run(cmd+" with the listed ACLs", func(t *testing.T) {
			wantCode, _, wantErr := runCmd(t, cmd, "-c", pipelineConfig(t, dir, cmd+"-admin", brokers, truth, sasl("admin", "admin-pw"), "", ""))
			code, _, stderr := runCmd(t, cmd, "-c", pipelineConfig(t, dir, cmd+"-least", brokers, truth, sasl("lossaudit", "lossaudit-pw"), "", ""))
			if code != wantCode || code > exitFindings {
				t.Fatalf("exit %d, the superuser's %d\nstderr: %s\nsuperuser's stderr: %s", code, wantCode, stderr, wantErr)
			}
			if got, want := withoutFirstSeen(readReport(cmd+"-least")), withoutFirstSeen(readReport(cmd+"-admin")); got != want {
				t.Errorf("the loss report differs from the superuser's:\n%s\nwant\n%s", got, want)
			}
		})
	}

	// Each ACL removed in turn.
	for _, a := range acls {
		setACL(a, false)
		for _, cmd := range commands {
			t.Run(cmd+" without "+a.what, func(t *testing.T) {
				name := strings.NewReplacer(" ", "-", "*", "x").Replace(cmd + "-no-" + a.what)
				code, stdout, stderr := runCmd(t, cmd, "-c", pipelineConfig(t, dir, name, brokers, truth, sasl("lossaudit", "lossaudit-pw"), "", ""))
				if code == exitOK || code == exitFindings {
					// Only a command that does not need the ACL may pass.
					if needs(cmd, a, truth.Inputs[0].Topic, truth.Output, truth.SchemasTopic) {
						t.Errorf("exit %d without %s: a verdict without the permission\nstdout: %.600s", code, a.what, stdout)
					}
					return
				}
				t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
				if code != exitUsage && code != exitIncomplete {
					t.Errorf("exit %d, want 2 or 3\nstderr: %s", code, stderr)
				}
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				last := lines[len(lines)-1]
				if !strings.Contains(strings.ToLower(last), "authorization failed") || !strings.Contains(last, strings.TrimSuffix(a.name, "-")) {
					t.Errorf("the error does not name the missing permission and %q:\n%s", a.name, last)
				}
			})
		}
		setACL(a, true)
	}

	// DESCRIBE without READ on an input: the topic is listed, its offsets
	// are there, and the fetch is refused.
	read := acls[0]
	describe := read
	describe.what, describe.op = "describe "+read.name, kmsg.ACLOperationDescribe
	setACL(read, false)
	setACL(describe, true)
	t.Run("audit with describe but not read on an input", func(t *testing.T) {
		code, _, stderr := runCmd(t, "audit", "-c", pipelineConfig(t, dir, "audit-describe-only", brokers, truth, sasl("lossaudit", "lossaudit-pw"), "", ""))
		if code != exitIncomplete || !strings.Contains(stderr, "Topic Authorization Failed") || !strings.Contains(stderr, read.name) {
			t.Errorf("exit %d, want 3 naming the refused fetch of %s\nstderr: %s", code, read.name, stderr)
		}
	})
}

// needs reports whether cmd reads what a grants, in the configuration of
// pipelineConfig.
func needs(cmd string, a aclSpec, source, sink, schemas string) bool {
	switch cmd {
	case "audit", "reconcile":
		return true // the keys are Avro: the schemas too
	case "compare":
		return a.resource == kmsg.ACLResourceTypeTopic && (a.name == source || a.name == sink)
	case "scan":
		return a.name != schemas // the group's offsets too; schemas only with --decode
	}
	return a.resource == kmsg.ACLResourceTypeTopic && a.name != schemas // topology: the pipeline's topics
}

// withoutFirstSeen drops the first_seen column of a reconcile step's loss
// report (the wall clock of the step that first reported each row).
func withoutFirstSeen(csv string) string {
	lines := strings.Split(csv, "\n")
	if len(lines) == 0 || !strings.HasSuffix(lines[0], ",first_seen") {
		return csv
	}
	for i, l := range lines {
		if j := strings.LastIndexByte(l, ','); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}
