package kread

import (
	"context"
	"fmt"
	"io"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupType is the kind of a group as ListGroups v5 names it (KIP-848).
type GroupType string

// The group types of Kafka 4.x.
const (
	// GroupClassic is a group of the classic rebalance protocol
	// (JoinGroup/SyncGroup): every group before Kafka 4.0.
	GroupClassic GroupType = "classic"
	// GroupConsumer is a consumer group of the KIP-848 protocol
	// (ConsumerGroupHeartbeat; group.protocol=consumer, GA in 4.0).
	GroupConsumer GroupType = "consumer"
	// GroupStreams is a Kafka Streams group of the KIP-1071 protocol
	// (StreamsGroupHeartbeat; group.protocol=streams).
	GroupStreams GroupType = "streams"
	// GroupShare is a share group (KIP-932): no committed offset per
	// partition.
	GroupShare GroupType = "share"
)

// Group is what a group's coordinator says of it.
type Group struct {
	ID string
	// Type is "" when the coordinator does not know the group (it never
	// existed, or it was deleted).
	Type GroupType
	// State is the state the type's describe API answered (classic:
	// Stable, PreparingRebalance, CompletingRebalance, Empty, Dead;
	// consumer and share: Stable, Assigning, Reconciling, Empty, Dead;
	// streams also NotReady).
	State string
	// Members counts the group's members.
	Members int
	// Via names the request that described the group.
	Via string
}

// Exists reports whether the coordinator knows the group.
func (g Group) Exists() bool { return g.Type != "" }

// Active reports whether the group has members: an application consuming
// with it. Members unknown (-1, a type this version cannot describe)
// counts as active, so that nothing is judged stopped on it.
func (g Group) Active() bool { return g.Members != 0 }

// API keys of the group requests (kmsg has them as well; these name them
// in ApiVersions answers).
const (
	listGroupsKey = 16
	// groupIDNotFound is GROUP_ID_NOT_FOUND, DescribeGroups v6's answer for
	// a group the coordinator does not know (v5 describes it as Dead).
	groupIDNotFound          = 69
	describeGroupsKey        = 15
	consumerGroupDescribeKey = 69
	shareGroupDescribeKey    = 77
	streamsGroupDescribeKey  = 89
)

// groupDescribe learns a group's type and state on its coordinator, on one
// connection: ApiVersions, then ListGroups v5 (the group's type), then the
// describe request of that type. Brokers without ListGroups v5 (before
// Kafka 3.8) know only classic groups and are asked DescribeGroups.
//
// DescribeGroups is not asked of other types: up to v5 a 4.x coordinator
// answers it for a consumer or streams group with state Dead, no members
// and no error, and v6 with GROUP_ID_NOT_FOUND ("not a classic group"),
// as TestRealKafka44GroupsAndTransactions shows.
type groupDescribe struct {
	group, clientID string
	corr            int32

	out Group
	// topology is a streams group's topology as its coordinator holds it
	// (nil for other types, or when the answer has none).
	topology *StreamsTopology
	// code is a Kafka error code of the answer (0: none), msg its message.
	code int16
	msg  string
}

// ApiKey implements protocol.Message.
func (r *groupDescribe) ApiKey() protocol.ApiKey { return protocol.DescribeGroups }

// Group implements protocol.GroupMessage: sent to the group's coordinator.
func (r *groupDescribe) Group() string { return r.group }

// Required implements protocol.RawExchanger: always.
func (r *groupDescribe) Required(map[protocol.ApiKey]int16) bool { return true }

// kexchange sends req at the highest version both the broker (max) and
// kmsg speak and reads the answer into resp.
func (r *groupDescribe) kexchange(rw io.ReadWriter, req kmsg.Request, resp kmsg.Response, max int16) error {
	v := min(max, req.MaxVersion())
	req.SetVersion(v)
	resp.SetVersion(v)
	r.corr++
	body, err := frameExchange(rw, req.Key(), v, r.corr, r.clientID, req.IsFlexible(), req.AppendTo(nil))
	if err != nil {
		return fmt.Errorf("%s v%d: %w", kmsg.NameForKey(req.Key()), v, err)
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(req.Key()), v, err)
	}
	return nil
}

// RawExchange implements protocol.RawExchanger.
func (r *groupDescribe) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	r.corr++
	body, err := frameExchange(rw, apiVersionsKey, 0, r.corr, r.clientID, false, nil)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	max := map[int16]int16{}
	for _, k := range []int16{listGroupsKey, describeGroupsKey, consumerGroupDescribeKey, shareGroupDescribeKey, streamsGroupDescribeKey} {
		if max[k], err = maxVersion(body, k); err != nil {
			return nil, fmt.Errorf("api versions: %w", err)
		}
	}
	r.out = Group{ID: r.group}
	typ := GroupClassic
	if max[listGroupsKey] >= 5 {
		lreq, lresp := kmsg.NewPtrListGroupsRequest(), kmsg.NewPtrListGroupsResponse()
		if err := r.kexchange(rw, lreq, lresp, max[listGroupsKey]); err != nil {
			return nil, err
		}
		if lresp.ErrorCode != 0 {
			r.code = lresp.ErrorCode
			return r, nil
		}
		typ = ""
		for _, g := range lresp.Groups {
			if g.Group == r.group {
				typ = GroupType(g.GroupType)
				r.out.State = g.GroupState
			}
		}
		if typ == "" {
			// Not listed: the group does not exist, or its coordinator
			// moved after FindCoordinator (a rolled broker). ListGroups
			// cannot tell; DescribeGroups answers NOT_COORDINATOR for
			// the second (retried with a new coordinator) and an empty
			// Dead group for the first.
			// (v6 answers GROUP_ID_NOT_FOUND instead of Dead).
			if err := r.describeClassic(rw, max[describeGroupsKey]); err != nil {
				return r, err
			}
			r.out.Via = "ListGroups, " + r.out.Via
			if r.code == groupIDNotFound {
				r.code, r.msg, r.out.State = 0, "", ""
				return r, nil
			}
			if r.code != 0 {
				return r, nil
			}
			if r.out.State == "Dead" && r.out.Members == 0 {
				r.out.State = ""
				return r, nil // not a group this coordinator knows
			}
			r.out.Type = GroupClassic // created since ListGroups answered
			return r, nil
		}
	}
	r.out.Type = typ
	switch typ {
	case GroupConsumer:
		return r, r.describeConsumer(rw, max[consumerGroupDescribeKey])
	case GroupStreams:
		return r, r.describeStreams(rw, max[streamsGroupDescribeKey])
	case GroupShare:
		return r, r.describeShare(rw, max[shareGroupDescribeKey])
	case GroupClassic:
		err := r.describeClassic(rw, max[describeGroupsKey])
		if err == nil && max[listGroupsKey] < 5 && r.out.State == "Dead" && r.out.Members == 0 {
			r.out.Type = "" // before ListGroups v5 an unknown group is described as Dead
		}
		return r, err
	}
	// A type this version does not know: its state from ListGroups, and
	// no member count, which the caller cannot read as "stopped".
	r.out.Members = -1
	r.out.Via = "ListGroups"
	return r, nil
}

// unsupported records that the broker lists a group type without the
// request describing it.
func (r *groupDescribe) unsupported(api string) error {
	return fmt.Errorf("group %q is a %s group but the coordinator does not answer %s", r.group, r.out.Type, api)
}

func (r *groupDescribe) describeClassic(rw io.ReadWriter, max int16) error {
	req, resp := kmsg.NewPtrDescribeGroupsRequest(), kmsg.NewPtrDescribeGroupsResponse()
	req.Groups = []string{r.group}
	if err := r.kexchange(rw, req, resp, max); err != nil {
		return err
	}
	r.out.Via = fmt.Sprintf("DescribeGroups v%d", req.Version)
	for _, g := range resp.Groups {
		if g.Group != r.group {
			continue
		}
		if g.ErrorCode != 0 {
			r.code, r.msg = g.ErrorCode, deref(g.ErrorMessage)
			return nil
		}
		r.out.State, r.out.Members = g.State, len(g.Members)
		return nil
	}
	return fmt.Errorf("group %q missing from the DescribeGroups answer", r.group)
}

// describeNew asks one of the describe requests of the KIP-848 family
// (max < 0: the broker lacks it) and takes the group's answer from pick.
func (r *groupDescribe) describeNew(rw io.ReadWriter, api string, max int16, req kmsg.Request, resp kmsg.Response,
	pick func() (found bool, code int16, msg *string, state string, members int)) error {
	if max < 0 {
		return r.unsupported(api)
	}
	if err := r.kexchange(rw, req, resp, max); err != nil {
		return err
	}
	r.out.Via = fmt.Sprintf("%s v%d", api, req.GetVersion())
	found, code, msg, state, members := pick()
	if !found {
		return fmt.Errorf("group %q missing from the %s answer", r.group, api)
	}
	r.code, r.msg, r.out.State, r.out.Members = code, deref(msg), state, members
	return nil
}

func (r *groupDescribe) describeConsumer(rw io.ReadWriter, max int16) error {
	req, resp := kmsg.NewPtrConsumerGroupDescribeRequest(), kmsg.NewPtrConsumerGroupDescribeResponse()
	req.Groups = []string{r.group}
	return r.describeNew(rw, "ConsumerGroupDescribe", max, req, resp, func() (bool, int16, *string, string, int) {
		for _, g := range resp.Groups {
			if g.Group == r.group {
				return true, g.ErrorCode, g.ErrorMessage, g.State, len(g.Members)
			}
		}
		return false, 0, nil, "", 0
	})
}

func (r *groupDescribe) describeStreams(rw io.ReadWriter, max int16) error {
	req, resp := kmsg.NewPtrStreamsGroupDescribeRequest(), kmsg.NewPtrStreamsGroupDescribeResponse()
	req.Groups = []string{r.group}
	return r.describeNew(rw, "StreamsGroupDescribe", max, req, resp, func() (bool, int16, *string, string, int) {
		for _, g := range resp.Groups {
			if g.Group == r.group {
				r.topology = streamsTopology(g.Topology)
				return true, g.ErrorCode, g.ErrorMessage, g.State, len(g.Members)
			}
		}
		return false, 0, nil, "", 0
	})
}

func (r *groupDescribe) describeShare(rw io.ReadWriter, max int16) error {
	req, resp := kmsg.NewPtrShareGroupDescribeRequest(), kmsg.NewPtrShareGroupDescribeResponse()
	req.GroupIDs = []string{r.group}
	return r.describeNew(rw, "ShareGroupDescribe", max, req, resp, func() (bool, int16, *string, string, int) {
		for _, g := range resp.Groups {
			if g.GroupID == r.group {
				return true, g.ErrorCode, g.ErrorMessage, g.GroupState, len(g.Members)
			}
		}
		return false, 0, nil, "", 0
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// DescribeGroup returns a group's type, state and members, each type
// described by its own API (ListGroups v5 tells the type; DescribeGroups
// only for classic groups, ConsumerGroupDescribe, StreamsGroupDescribe or
// ShareGroupDescribe for the others). It never joins the group. A group
// the coordinator does not know is returned with an empty Type and no
// error.
func (c *Client) DescribeGroup(ctx context.Context, group string) (Group, error) {
	res, err := c.describeGroup(ctx, group)
	if err != nil {
		return Group{}, err
	}
	return res.out, nil
}

// describeGroup is DescribeGroup's exchange, with the whole answer.
func (c *Client) describeGroup(ctx context.Context, group string) (*groupDescribe, error) {
	var out *groupDescribe
	err := c.retry(ctx, "describing group "+group, func(ctx context.Context) error {
		r, err := c.roundTrip(ctx, &groupDescribe{group: group, clientID: c.o.ClientID})
		if err != nil {
			return err
		}
		res, ok := r.(*groupDescribe)
		if !ok {
			return fmt.Errorf("unexpected response %T", r)
		}
		if err := codeErr(res.code); err != nil {
			if res.msg != "" {
				return fmt.Errorf("%w (%s)", err, res.msg)
			}
			return err
		}
		out = res
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("describing group %q: %w", group, err)
	}
	return out, nil
}
