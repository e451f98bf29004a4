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
			got, _, err := parseProperties(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, _, err := parseProperties("a=1\nb=\\u12\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
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
		})
	}
}

// TestClientPropertiesErrors: problems in client.properties name the file,
// the line and the property; nothing silently falls back to a default.
func TestClientPropertiesErrors(t *testing.T) {
	certPEM, _ := pemPair(t)
	const bs = "bootstrap.servers=h1:9092\n"
	tests := []struct {
		name  string
		props string
		env   map[string]string
		key   string // Error.Key
		want  string // Error(), exactly; %P% is the properties file, %DIR% its directory
	}{
		{"JKS truststore", bs + "security.protocol=SSL\nssl.truststore.location=%DIR%/trust.jks\nssl.truststore.password=changeit\n", nil,
			"ssl.truststore.location", "%P%:3: ssl.truststore.location: %DIR%/trust.jks is a Java key store (JKS); lossaudit reads PEM files only. Convert it, e.g. " +
				"`keytool -importkeystore -srckeystore %DIR%/trust.jks -destkeystore store.p12 -deststoretype PKCS12` then " +
				"`openssl pkcs12 -in store.p12 -out store.pem -nodes` (for a truststore add -nokeys)"},
		{"PKCS12 keystore", bs + "security.protocol=SSL\nssl.keystore.type=PKCS12\nssl.keystore.location=%DIR%/ks.p12\n", nil,
			"ssl.keystore.location", "%P%:4: ssl.keystore.location: %DIR%/ks.p12 is a PKCS12 key store; lossaudit reads PEM files only. Convert it, e.g. " +
				"`openssl pkcs12 -in %DIR%/ks.p12 -out store.pem -nodes` (for a truststore add -nokeys)"},
		{"keystore without private key", bs + "security.protocol=SSL\nssl.keystore.location=%DIR%/ca.pem\n", nil,
			"ssl.keystore.location", "%P%:3: ssl.keystore.location: %DIR%/ca.pem holds no PEM private key"},
		{"missing truststore", bs + "security.protocol=SSL\nssl.truststore.location=%DIR%/nope.pem\n", nil,
			"ssl.truststore.location", "%P%:3: ssl.truststore.location: cannot read %DIR%/nope.pem: no such file or directory"},
		{"bad protocol", bs + "security.protocol=TLS\n", nil,
			"security.protocol", `%P%:2: security.protocol: "TLS" is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{"GSSAPI default", bs + "security.protocol=SASL_SSL\n", nil,
			"sasl.mechanism", "%P%: sasl.mechanism: is not set, so Kafka clients would use GSSAPI (Kerberos), which lossaudit does not support; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"OAUTHBEARER", bs + "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n", nil,
			"sasl.mechanism", `%P%:3: sasl.mechanism: "OAUTHBEARER" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"mechanism mismatch", bs + "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=x.PlainLoginModule required username=\"u\" password=\"topsecret\";\n", nil,
			"sasl.jaas.config", "%P%:4: sasl.jaas.config: uses x.PlainLoginModule but the SASL mechanism is SCRAM-SHA-256"},
		{"bad jaas", bs + "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=x.PlainLoginModule required username=\"u\" \\\n  password=\"topsecret\"\n", nil,
			"sasl.jaas.config", "%P%:4: sasl.jaas.config: login module x.PlainLoginModule: missing the final ';'"},
		{"bad bootstrap", "bootstrap.servers=h1:9092,h2\n", nil,
			"bootstrap.servers", `%P%:1: bootstrap.servers: "h2" is not a host:port address: missing port in address`},
		{"bad user info", bs + "basic.auth.user.info=justuser\n", nil,
			"basic.auth.user.info", "%P%:2: basic.auth.user.info: must be user:password"},
		{"bad registry user info", bs + "schema.registry.basic.auth.user.info=justuser\n", nil,
			"schema.registry.basic.auth.user.info", "%P%:2: schema.registry.basic.auth.user.info: must be user:password"},
		{"inline PEM", bs + "security.protocol=SSL\nssl.keystore.key=-----BEGIN PRIVATE KEY----- ...\n", nil,
			"ssl.keystore.key", "%P%:3: ssl.keystore.key: inline PEM values are not supported; put the PEM in a file and name it in ssl.truststore.location / ssl.keystore.location"},
		{"bootstrap typo", "# ops wiki\nbootstrap.server=h1:9092\n", nil,
			"bootstrap.server", "%P%:2: bootstrap.server: not a property lossaudit reads (did you mean bootstrap.servers?)"},
		{"case typo", "Bootstrap.Servers=h1:9092\n", nil,
			"Bootstrap.Servers", "%P%:1: Bootstrap.Servers: not a property lossaudit reads (did you mean bootstrap.servers?)"},
		{"librdkafka's sasl.mechanisms", bs + "security.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\n", nil,
			"sasl.mechanisms", "%P%:3: sasl.mechanisms: not a property lossaudit reads (did you mean sasl.mechanism?)"},
		{"truststore typo", bs + "security.protocol=SSL\nssl.trustore.location=%DIR%/ca.pem\n", nil,
			"ssl.trustore.location", "%P%:3: ssl.trustore.location: not a property lossaudit reads (did you mean ssl.truststore.location?)"},
		{"no bootstrap.servers and no brokers", "security.protocol=PLAINTEXT\nacks=all\n", nil,
			"", "%P%: sets no bootstrap.servers, and kafka.brokers is not set either: add bootstrap.servers=host:port to it, or set kafka.brokers"},
		{"garbage text", "hello world\nthis is not a properties file\n", nil,
			"", "%P%: sets no bootstrap.servers, and kafka.brokers is not set either: add bootstrap.servers=host:port to it, or set kafka.brokers"},
		{"binary file", "\xfe\xed\xfe\xed\x00\x00\x00\x02", nil,
			"", "%P%: is not a text file of key=value lines; kafka.client_properties (--command-config) names a Java-style client.properties file"},
		{"bad escape", bs + "a=1\nb=\\u12\n", nil, "", "%P%:3: value of b: malformed \\uxxxx escape"},
		{"brokers from the environment still need a sane file", "bootstrap.server=h1:9092\n", map[string]string{"LOSSAUDIT_KAFKA_BROKERS": "e:9092"},
			"bootstrap.server", "%P%:1: bootstrap.server: not a property lossaudit reads (did you mean bootstrap.servers?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			props := dir + "/client.properties"
			sub := func(s string) string {
				return strings.ReplaceAll(strings.ReplaceAll(s, "%P%", props), "%DIR%", dir)
			}
			writeFile(t, dir, "trust.jks", "\xfe\xed\xfe\xed\x00\x00\x00\x02rest")
			writeFile(t, dir, "ks.p12", "\x30\x82\x0a\x00rest")
			writeFile(t, dir, "ca.pem", certPEM)
			writeFile(t, dir, "client.properties", sub(tc.props))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			t.Setenv("LOSSAUDIT_KAFKA_CLIENT_PROPERTIES", props)
			_, err := Load(LoadOptions{})
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *config.Error", err, err)
			}
			if got := err.Error(); got != sub(tc.want) {
				t.Errorf("error\n got %s\nwant %s", got, sub(tc.want))
			}
			if ce.Key != tc.key {
				t.Errorf("Key = %q, want %q", ce.Key, tc.key)
			}
			if strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), "changeit") {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
}

// TestClientPropertiesSources: a value the properties file supplies is
// reported at its property and line when a later check rejects it.
func TestClientPropertiesSources(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	props := writeFile(t, dir, "client.properties", "bootstrap.servers=h1:9092\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=x.PlainLoginModule required username=\"u\" password=\"p\";\n")
	file := writeFile(t, dir, "audit.yaml", "kafka:\n  client_properties: "+props+"\n")
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ key, want string }{
		{"kafka.brokers[0]", props + ":1: bootstrap.servers: x"},
		{"kafka.sasl.username", props + ":4: sasl.jaas.config: x"},
		{"kafka.sasl.mechanism", props + ":3: sasl.mechanism: x"},
		{"kafka.tls.enabled", props + ":2: security.protocol: x"},
		{"kafka.client_properties", file + ":2: kafka.client_properties: x"},
		{"kafka.concurrency", file + ": kafka.concurrency: x"}, // a default: where it would be set
	}
	for _, tc := range tests {
		if got := c.Errorf(tc.key, "x").Error(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.key, got, tc.want)
		}
	}
}
