package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"

	"github.com/lossaudit/lossaudit/config"
)

// webConfig is what watch needs to know of a web configuration file
// (watch.web_config_file, prometheus/exporter-toolkit's format) to warn
// about an exposed endpoint: whether it turns on TLS and basic
// authentication. exporter-toolkit itself reads and applies the file.
type webConfig struct {
	tls, auth bool
}

// exposure is the warning watch logs at start when its endpoints, served
// on addr, are reachable from other hosts without TLS or without
// authentication; "" when they are not.
func (c webConfig) exposure(addr net.Addr) string {
	var missing string
	switch {
	case isLoopback(addr) || c.tls && c.auth:
		return ""
	case !c.tls && !c.auth:
		missing = "TLS or authentication: anyone who can connect reads every lost key"
	case !c.tls:
		missing = "TLS: passwords and reports cross the network in clear"
	default:
		missing = "authentication: anyone who can connect reads every lost key"
	}
	return "the endpoints are reachable beyond this host without " + missing +
		"; set watch.web_config_file (--web.config.file, docs/security.md) or listen on 127.0.0.1"
}

// readWebConfig checks the web configuration file at path ("" for none)
// with exporter-toolkit and says what it turns on. A bad file is a
// configuration error naming watch.web_config_file.
func readWebConfig(path string) (webConfig, error) {
	if path == "" {
		return webConfig{}, nil
	}
	bad := func(err error) error {
		return &config.Error{Key: "watch.web_config_file", Msg: fmt.Sprintf("%s: %v", path, err)}
	}
	if err := web.Validate(path); err != nil {
		return webConfig{}, bad(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return webConfig{}, bad(err)
	}
	var f struct {
		TLS struct {
			CertFile string `yaml:"cert_file"`
			Cert     string `yaml:"cert"`
		} `yaml:"tls_server_config"`
		Users map[string]any `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return webConfig{}, bad(err)
	}
	return webConfig{tls: f.TLS.CertFile != "" || f.TLS.Cert != "", auth: len(f.Users) > 0}, nil
}

// serveWatch serves handler on ln through exporter-toolkit, with the TLS
// and basic authentication of the web configuration file webFile ("" for
// plain HTTP); the toolkit's own log lines go to logs at warning level and
// above. The returned channel gets the error that ends serving.
func serveWatch(ln net.Listener, handler http.Handler, webFile string, logs slog.Handler) (*http.Server, <-chan error) {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	flags := &web.FlagConfig{WebConfigFile: &webFile}
	toolkitLog := slog.New(levelAtLeast{logs, slog.LevelWarn})
	served := make(chan error, 1)
	go func() { served <- web.Serve(ln, srv, flags, toolkitLog) }()
	return srv, served
}

// levelAtLeast passes on the records of at least its level.
type levelAtLeast struct {
	slog.Handler
	min slog.Level
}

func (h levelAtLeast) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

// isLoopback reports whether addr is a loopback address (127.0.0.0/8,
// ::1): anything else, including the unspecified 0.0.0.0 and ::, is
// reachable from other hosts.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
