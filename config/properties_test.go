package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[string]string
	}{
		{"separators", "a=1\nb: 2\nc 3\nd\t=\t4\ne = 5 \n", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5 "}},
		{"comments and blanks", "# x=1\n  ! y=2\n\n   \nz=3\n", map[string]string{"z": "3"}},
		{"continuation", "bootstrap.servers=h1:9092,\\\n    h2:9092,\\\n\th3:9092\nnext=1\n",
			map[string]string{"bootstrap.servers": "h1:9092,h2:9092,h3:9092", "next": "1"}},
		{"escaped backslash is not a continuation", "a=x\\\\\nb=y\n", map[string]string{"a": `x\`, "b": "y"}},
		{"comment does not continue", "# c \\\nk=v\n", map[string]string{"k": "v"}},
		{"escapes", `k\=ey\:x=va\tl\u00e9\n` + "\n", map[string]string{"k=ey:x": "va\tl\u00e9\n"}},
		{"escaped space in key", `my\ key = v`, map[string]string{"my key": "v"}},
		{"value keeps separators", "url=http://h:8081/a=b\n", map[string]string{"url": "http://h:8081/a=b"}},
		{"empty value", "a=\nb\n", map[string]string{"a": "", "b": ""}},
		{"CRLF", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"later wins", "a=1\na=2\n", map[string]string{"a": "2"}},
		{"continuation at end of file", "a=1\\", map[string]string{"a": "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProperties(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := parseProperties("a=1\nb=\\u12\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed \\u escape: err = %v, want one naming line 2", err)
	}
}

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		name, in   string
		module     string
		opts       map[string]string
		wantErrSub string
	}{
		{name: "plain", in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`,
			module: "org.apache.kafka.common.security.plain.PlainLoginModule", opts: map[string]string{"username": "alice", "password": "alice-secret"}},
		{name: "scram with escapes and spaces", in: "org.apache.kafka.common.security.scram.ScramLoginModule   required\n  username=\"bob\"  password=\"p a\\\"s;s=\\\\\" ;",
			module: "org.apache.kafka.common.security.scram.ScramLoginModule", opts: map[string]string{"username": "bob", "password": `p a"s;s=\`}},
		{name: "adjacent quoted values", in: `x.PlainLoginModule optional username=carol password='it''s';`,
			wantErrSub: "expected option=value"},
		{name: "bare word values", in: `x.PlainLoginModule sufficient username=carol password=secret;`,
			module: "x.PlainLoginModule", opts: map[string]string{"username": "carol", "password": "secret"}},
		{name: "single-quoted", in: `x.ScramLoginModule required username='dave' password='s"q';`,
			module: "x.ScramLoginModule", opts: map[string]string{"username": "dave", "password": `s"q`}},
		{name: "missing semicolon", in: `x.PlainLoginModule required username="a" password="b"`, wantErrSub: "missing the final ';'"},
		{name: "bad flag", in: `x.PlainLoginModule mandatory username="a";`, wantErrSub: "not a control flag"},
		{name: "two modules", in: `x.A required; y.B required;`, wantErrSub: "2 login modules"},
		{name: "unterminated", in: `x.A required password="abc;`, wantErrSub: "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseJAAS(tc.in)
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErrSub)
				}
				for _, secret := range []string{"secret", "abc", `"b"`} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q leaks a value", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Module != tc.module || !reflect.DeepEqual(got.Options, tc.opts) {
				t.Errorf("got %s %q, want %s %q", got.Module, got.Options, tc.module, tc.opts)
			}
		})
	}
}

func TestClientProperties(t *testing.T) {
	certPEM, keyPEM := pemPair(t)
	type want struct {
		brokers                    []string
		tls                        bool
		ca, cert, key              string
		mech, user, pass           string
		registry, regUser, regPass string
	}
	tests := []struct {
		name  string
		props string
		yaml  string // extra YAML under kafka: / schema: (%DIR% replaced)
		env   map[string]string
		want  want
	}{
		{
			name: "SASL_SSL PLAIN with PEM truststore",
			props: `# from the ops wiki
bootstrap.servers=SASL_SSL://b1.example.com:9093,b2.example.com:9093
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="alice" \
    password="alice-secret";
ssl.truststore.type=PEM
ssl.truststore.location=%DIR%/ca.pem
ssl.endpoint.identification.algorithm=
`,
			want: want{brokers: []string{"b1.example.com:9093", "b2.example.com:9093"}, tls: true, ca: "%DIR%/ca.pem",
				mech: "PLAIN", user: "alice", pass: "alice-secret"},
		},
		{
			name: "SASL_PLAINTEXT SCRAM-SHA-512",
			props: "bootstrap.servers: h1:9092\nsecurity.protocol: sasl_plaintext\nsasl.mechanism: SCRAM-SHA-512\n" +
				"sasl.jaas.config: org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bob\" password=\"b\\\\\"ob\";\n",
			want: want{brokers: []string{"h1:9092"}, mech: "SCRAM-SHA-512", user: "bob", pass: `b"ob`},
		},
		{
			name: "SSL with PEM keystore (mutual TLS)",
			props: "bootstrap.servers=h1:9093\nsecurity.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=%DIR%/client.pem\n" +
				"ssl.truststore.location=%DIR%/ca.pem\n",
			want: want{brokers: []string{"h1:9093"}, tls: true, ca: "%DIR%/ca.pem", cert: "%DIR%/client.pem", key: "%DIR%/client.pem"},
		},
		{
			name:  "librdkafka-style locations",
			props: "bootstrap.servers=h1:9093\nsecurity.protocol=SSL\nssl.ca.location=%DIR%/ca.pem\nssl.certificate.location=%DIR%/ca.pem\nssl.key.location=%DIR%/key.pem\n",
			want:  want{brokers: []string{"h1:9093"}, tls: true, ca: "%DIR%/ca.pem", cert: "%DIR%/ca.pem", key: "%DIR%/key.pem"},
		},
		{
			name: "YAML and env win over the properties",
			props: "bootstrap.servers=props:9092\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" +
				"sasl.jaas.config=x.PlainLoginModule required username=\"pu\" password=\"pp\";\n" +
				"schema.registry.url=http://props:8081\nbasic.auth.user.info=ru:rp\n",
			yaml: "kafka:\n  brokers: [yaml:9092]\n  tls: {enabled: false}\n  sasl: {username: yu}\nschema:\n  registry_username: yru\n",
			env:  map[string]string{"LOSSAUDIT_KAFKA_SASL_PASSWORD": "ep"},
			want: want{brokers: []string{"yaml:9092"}, mech: "PLAIN", user: "yu", pass: "ep",
				registry: "http://props:8081", regUser: "yru", regPass: "rp"},
		},
		{
			name:  "PLAINTEXT ignores sasl settings",
			props: "bootstrap.servers=h:9092\nsasl.mechanism=PLAIN\nsasl.jaas.config=x.PlainLoginModule required username=\"u\" password=\"p\";\n",
			want:  want{brokers: []string{"h:9092"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			sub := func(s string) string { return strings.ReplaceAll(s, "%DIR%", dir) }
			writeFile(t, dir, "ca.pem", certPEM)
			writeFile(t, dir, "key.pem", keyPEM)
			writeFile(t, dir, "client.pem", certPEM+keyPEM)
			props := writeFile(t, dir, "client.properties", sub(tc.props))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			file := writeFile(t, dir, "audit.yaml", sub(tc.yaml)+"\n")
			t.Setenv("LOSSAUDIT_KAFKA_CLIENT_PROPERTIES", props)
			c, err := Load(LoadOptions{File: file})
			if err != nil {
				t.Fatal(err)
			}
			k := c.Kafka
			got := want{k.Brokers, k.TLS.Enabled, k.TLS.CAFile, k.TLS.CertFile, k.TLS.KeyFile, k.SASL.Mechanism, k.SASL.Username, k.SASL.Password,
				c.Schema.RegistryURL, c.Schema.RegistryUsername, c.Schema.RegistryPassword}
			w := tc.want
			w.ca, w.cert, w.key = sub(w.ca), sub(w.cert), sub(w.key)
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
			if _, err := k.TLSConfig(); err != nil {
				t.Errorf("TLSConfig: %v", err)
			}
			if _, err := k.Mechanism(); err != nil {
				t.Errorf("Mechanism: %v", err)
			}
		})
	}
}

func TestClientPropertiesErrors(t *testing.T) {
	certPEM, _ := pemPair(t)
	tests := []struct {
		name  string
		props string
		key   string // Error.Key, %DIR% replaced
		msg   string
	}{
		{"JKS truststore", "security.protocol=SSL\nssl.truststore.location=%DIR%/trust.jks\nssl.truststore.password=changeit\n",
			"ssl.truststore.location (in %DIR%/client.properties)", "Java key store (JKS)"},
		{"PKCS12 keystore", "security.protocol=SSL\nssl.keystore.type=PKCS12\nssl.keystore.location=%DIR%/ks.p12\n",
			"ssl.keystore.location (in %DIR%/client.properties)", "PKCS12"},
		{"keystore without private key", "security.protocol=SSL\nssl.keystore.location=%DIR%/ca.pem\n",
			"ssl.keystore.location (in %DIR%/client.properties)", "no PEM private key"},
		{"missing truststore", "security.protocol=SSL\nssl.truststore.location=%DIR%/nope.pem\n",
			"ssl.truststore.location (in %DIR%/client.properties)", "cannot read %DIR%/nope.pem"},
		{"bad protocol", "security.protocol=TLS\n", "security.protocol (in %DIR%/client.properties)", `"TLS" is not one of`},
		{"GSSAPI default", "security.protocol=SASL_SSL\n", "sasl.mechanism (in %DIR%/client.properties)", "GSSAPI"},
		{"OAUTHBEARER", "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n", "sasl.mechanism (in %DIR%/client.properties)", `"OAUTHBEARER" is not one of`},
		{"mechanism mismatch", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=x.PlainLoginModule required username=\"u\" password=\"topsecret\";\n",
			"sasl.jaas.config (in %DIR%/client.properties)", "uses x.PlainLoginModule but the SASL mechanism is SCRAM-SHA-256"},
		{"bad jaas", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=x.PlainLoginModule required username=\"u\" password=\"topsecret\"\n",
			"sasl.jaas.config (in %DIR%/client.properties)", "missing the final ';'"},
		{"bad bootstrap", "bootstrap.servers=h1:9092,h2\n", "bootstrap.servers (in %DIR%/client.properties)", `"h2" is not a host:port`},
		{"bad user info", "basic.auth.user.info=justuser\n", "basic.auth.user.info (in %DIR%/client.properties)", "user:password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			sub := func(s string) string { return strings.ReplaceAll(s, "%DIR%", dir) }
			writeFile(t, dir, "trust.jks", "\xfe\xed\xfe\xed\x00\x00\x00\x02rest")
			writeFile(t, dir, "ks.p12", "\x30\x82\x0a\x00rest")
			writeFile(t, dir, "ca.pem", certPEM)
			props := writeFile(t, dir, "client.properties", sub(tc.props))
			t.Setenv("LOSSAUDIT_KAFKA_CLIENT_PROPERTIES", props)
			_, err := Load(LoadOptions{})
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *config.Error", err, err)
			}
			if ce.Key != sub(tc.key) || !strings.Contains(ce.Msg, sub(tc.msg)) {
				t.Errorf("got %v\nwant key %q and message containing %q", err, sub(tc.key), sub(tc.msg))
			}
			if strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), "changeit") {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
}
