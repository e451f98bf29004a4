package kread

import (
	"context"
	"errors"
	"fmt"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/describeconfigs"
)

// topicResource is DescribeConfigs' resource type of a topic.
const topicResource = 2

// TopicConfigError is a topic whose configs the broker would not describe;
// Denied says it was for lack of the DESCRIBE_CONFIGS permission on it.
type TopicConfigError struct {
	Topic  string
	Denied bool
	Err    error
}

// Error implements error.
func (e *TopicConfigError) Error() string {
	if e.Denied {
		return fmt.Sprintf("describing the configs of topic %s: not authorized (DESCRIBE_CONFIGS on the topic is needed)", e.Topic)
	}
	return fmt.Sprintf("describing the configs of topic %s: %v", e.Topic, e.Err)
}

// Unwrap returns the broker's error.
func (e *TopicConfigError) Unwrap() error { return e.Err }

// TopicConfig returns the value of each named config of topic as the
// broker describes it (DescribeConfigs, read-only); a name the broker does
// not return is absent, and a topic that does not exist has none. A
// refusal for that topic is a *TopicConfigError.
func (c *Client) TopicConfig(ctx context.Context, topic string, names ...string) (map[string]string, error) {
	out := map[string]string{}
	err := c.retry(ctx, "describing the configs of topic "+topic, func(ctx context.Context) error {
		r, err := c.roundTrip(ctx, &describeconfigs.Request{Resources: []describeconfigs.RequestResource{
			{ResourceType: topicResource, ResourceName: topic, ConfigNames: names}}})
		if err != nil {
			return err
		}
		res, ok := r.(*describeconfigs.Response)
		if !ok {
			return fmt.Errorf("unexpected response %T", r)
		}
		for _, rr := range res.Resources {
			if rr.ResourceName != topic {
				continue
			}
			if kafka.Error(rr.ErrorCode) == kafka.UnknownTopicOrPartition {
				return nil // no topic, no configs: the caller's existence check says so
			}
			if err := codeErr(rr.ErrorCode); err != nil {
				return err
			}
			for _, e := range rr.ConfigEntries {
				out[e.ConfigName] = e.ConfigValue
			}
			return nil
		}
		return fmt.Errorf("topic %q missing from the answer", topic)
	})
	var ke kafka.Error
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &ke) && (ke == kafka.TopicAuthorizationFailed || ke == kafka.ClusterAuthorizationFailed):
		return nil, &TopicConfigError{Topic: topic, Denied: true, Err: err}
	}
	return nil, &TopicConfigError{Topic: topic, Err: err}
}
