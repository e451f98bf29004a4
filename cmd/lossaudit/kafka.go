package main

import (
	"errors"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
)

// kreadOptions maps the kafka section of the configuration to reader
// options. TLS and SASL problems come back as *config.Error (exit 2).
func kreadOptions(cfg *config.Config) (kread.Options, error) {
	k := cfg.Kafka
	tlsCfg, err := k.TLSConfig()
	if err != nil {
		return kread.Options{}, asConfigError("kafka.tls", err)
	}
	mech, err := k.Mechanism()
	if err != nil {
		return kread.Options{}, asConfigError("kafka.sasl", err)
	}
	return kread.Options{
		Brokers:           k.Brokers,
		TLS:               tlsCfg,
		SASL:              mech,
		ClientID:          "lossaudit",
		Timeout:           k.Timeout,
		Concurrency:       k.Concurrency,
		FetchMaxBytes:     k.FetchMaxBytes,
		PartitionMaxBytes: k.PartitionMaxBytes,
	}, nil
}

// newReader builds the committed reader for cfg; a configuration the
// reader rejects (a malformed broker address) is a *config.Error.
func newReader(cfg *config.Config, tweak func(*kread.Options)) (*kread.Client, error) {
	o, err := kreadOptions(cfg)
	if err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(&o)
	}
	c, err := kread.New(o)
	if err != nil {
		return nil, asConfigError("kafka.brokers", err)
	}
	return c, nil
}

// asConfigError keeps a *config.Error as is and turns anything else into
// one about key.
func asConfigError(key string, err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return err
	}
	return &config.Error{Key: key, Msg: fmt.Sprint(err)}
}
