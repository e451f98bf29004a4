// Package secure runs lossaudit against a secured real Kafka cluster
// (SASL_SSL with SCRAM-SHA-512, a mutual-TLS listener, the
// StandardAuthorizer) as a principal holding exactly the ACLs
// docs/security.md lists, given there as kafka-acls.sh commands.
package secure

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Grant is the ACLs one kafka-acls.sh command gives on one resource: a
// principal, the resource and the operations.
type Grant struct {
	Principal string
	Resource  kmsg.ACLResourceType
	Name      string
	Pattern   kmsg.ACLResourcePatternType
	Ops       []kmsg.ACLOperation
	Command   int // index of the command among those parsed, from 0
}

// String names the grant as kafka-acls.sh would list it.
func (g Grant) String() string {
	var ops []string
	for _, op := range g.Ops {
		ops = append(ops, op.String())
	}
	return fmt.Sprintf("%s %s on %s:%s:%s", g.Principal, strings.Join(ops, "+"), g.Resource, g.Pattern, g.Name)
}

// ParseACLCommands parses the `kafka-acls.sh ... --add` commands of text
// (lines continued with a trailing backslash, # comments skipped) into one
// Grant per resource per command, renaming each resource name found in
// rename. Only the options the documentation uses are understood; any
// other is an error, so the documentation cannot drift from what is tested.
func ParseACLCommands(text string, rename map[string]string) ([]Grant, error) {
	var cmds []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
		if !cont {
			cmds = append(cmds, cur.String())
			cur.Reset()
		}
	}
	var out []Grant
	for i, c := range cmds {
		f := strings.Fields(c)
		if len(f) == 0 || f[0] != "kafka-acls.sh" {
			return nil, fmt.Errorf("command %d: not kafka-acls.sh: %q", i+1, c)
		}
		var principal string
		var ops []kmsg.ACLOperation
		pattern := kmsg.ACLResourcePatternTypeLiteral
		var res []Grant
		add := false
		for j := 1; j < len(f); j++ {
			arg := func() (string, error) {
				if j+1 >= len(f) {
					return "", fmt.Errorf("command %d: %s without a value", i+1, f[j])
				}
				j++
				return f[j], nil
			}
			var v string
			var err error
			switch f[j] {
			case "--add":
				add = true
				continue
			case "--bootstrap-server", "--command-config":
				_, err = arg()
			case "--allow-principal":
				principal, err = arg()
			case "--operation":
				if v, err = arg(); err == nil {
					var op kmsg.ACLOperation
					if op, err = kmsg.ParseACLOperation(strings.ToLower(v)); err == nil {
						ops = append(ops, op)
					}
				}
			case "--resource-pattern-type":
				if v, err = arg(); err == nil {
					pattern, err = kmsg.ParseACLResourcePatternType(strings.ToLower(v))
				}
			case "--topic", "--group":
				typ := kmsg.ACLResourceTypeTopic
				if f[j] == "--group" {
					typ = kmsg.ACLResourceTypeGroup
				}
				if v, err = arg(); err == nil {
					if r, ok := rename[v]; ok {
						v = r
					}
					res = append(res, Grant{Resource: typ, Name: v})
				}
			default:
				err = fmt.Errorf("command %d: option %s is not understood by the test", i+1, f[j])
			}
			if err != nil {
				return nil, err
			}
		}
		if !add || principal == "" || len(ops) == 0 || len(res) == 0 {
			return nil, fmt.Errorf("command %d: want --add, --allow-principal, --operation and a resource: %q", i+1, c)
		}
		for _, r := range res {
			r.Principal, r.Pattern, r.Ops, r.Command = principal, pattern, ops, i
			out = append(out, r)
		}
	}
	return out, nil
}

// DocACLCommands returns the first ```sh block of the markdown file path
// that follows a line containing marker.
func DocACLCommands(path, marker string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the ACL commands: %w", err)
	}
	s := string(b)
	i := strings.Index(s, marker)
	if i < 0 {
		return "", fmt.Errorf("%s: no line with %q", path, marker)
	}
	s = s[i:]
	start := strings.Index(s, "```sh\n")
	if start < 0 {
		return "", fmt.Errorf("%s: no ```sh block after %q", path, marker)
	}
	s = s[start+len("```sh\n"):]
	end := strings.Index(s, "```")
	if end < 0 {
		return "", fmt.Errorf("%s: the ```sh block after %q does not end", path, marker)
	}
	return s[:end], nil
}

// SetGrant adds (add) or removes the ACLs of g with the admin API, then
// waits until every broker's authorizer has them, or no longer has them.
func SetGrant(ctx context.Context, cl *kgo.Client, g Grant, add bool) error {
	if add {
		req := kmsg.NewPtrCreateACLsRequest()
		for _, op := range g.Ops {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = g.Resource, g.Name, g.Pattern
			c.Principal, c.Host, c.Operation, c.PermissionType = g.Principal, "*", op, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("adding %s: %w", g, err)
		}
		for _, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				return fmt.Errorf("adding %s: %w", g, err)
			}
		}
	} else {
		req := kmsg.NewPtrDeleteACLsRequest()
		for _, op := range g.Ops {
			f := kmsg.NewDeleteACLsRequestFilter()
			name, principal, host := g.Name, g.Principal, "*"
			f.ResourceType, f.ResourceName, f.ResourcePatternType = g.Resource, &name, g.Pattern
			f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, op, kmsg.ACLPermissionTypeAllow
			req.Filters = append(req.Filters, f)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("removing %s: %w", g, err)
		}
		for _, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				return fmt.Errorf("removing %s: %w", g, err)
			}
		}
	}
	return waitGrant(ctx, cl, g, add)
}

// waitGrant polls every broker until its ACLs hold g's operations for
// g's principal and resource (present) or none of them.
func waitGrant(ctx context.Context, cl *kgo.Client, g Grant, present bool) error {
	var last error
	for {
		last = func() error {
			meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			for _, b := range meta.Brokers {
				req := kmsg.NewPtrDescribeACLsRequest()
				name, principal := g.Name, g.Principal
				req.ResourceType, req.ResourceName, req.ResourcePatternType = g.Resource, &name, g.Pattern
				req.Principal, req.Operation, req.PermissionType = &principal, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow
				r, err := cl.Broker(int(b.NodeID)).Request(ctx, req)
				if err != nil {
					return err
				}
				resp := r.(*kmsg.DescribeACLsResponse)
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					return err
				}
				have := map[kmsg.ACLOperation]bool{}
				for _, res := range resp.Resources {
					for _, a := range res.ACLs {
						have[a.Operation] = true
					}
				}
				for _, op := range g.Ops {
					if have[op] != present {
						return fmt.Errorf("broker %d: %s present: %v", b.NodeID, op, have[op])
					}
				}
			}
			return nil
		}()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("waiting for every broker to see %s (present %v): %w", g, present, ctx.Err()), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
