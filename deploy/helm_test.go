package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/testbed/testbedenv"

	"go.yaml.in/yaml/v3"

	"github.com/lossaudit/lossaudit/config"
)

const (
	chartDir  = "helm/lossaudit"
	helmHint  = "go install helm.sh/helm/v3/cmd/helm@v3.22.0"
	configDir = "/etc/lossaudit"        // where the chart mounts its ConfigMap
	secretDir = "/etc/lossaudit-secret" // and its Secret
)

// manifest is the part of a rendered Kubernetes object the test reads.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
		JobTemplate       struct {
			Spec struct {
				PodFailurePolicy podFailurePolicy `yaml:"podFailurePolicy"`
				Template         podTemplate      `yaml:"template"`
				// The sharded reconcile's Indexed Jobs.
				CompletionMode       string `yaml:"completionMode"`
				Completions          *int   `yaml:"completions"`
				Parallelism          *int   `yaml:"parallelism"`
				BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
		// A Job's (the sharded audit's Indexed Job).
		CompletionMode       string           `yaml:"completionMode"`
		Completions          *int             `yaml:"completions"`
		Parallelism          *int             `yaml:"parallelism"`
		BackoffLimitPerIndex *int             `yaml:"backoffLimitPerIndex"`
		PodFailurePolicy     podFailurePolicy `yaml:"podFailurePolicy"`
		Template             podTemplate      `yaml:"template"`
		Strategy             struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Replicas *int `yaml:"replicas"`
		Ingress  []struct {
			From []any `yaml:"from"`
		} `yaml:"ingress"`
		PolicyTypes []string `yaml:"policyTypes"`
	} `yaml:"spec"`
}

// podFailurePolicy is a Job's pod failure policy.
type podFailurePolicy struct {
	Rules []struct {
		Action      string `yaml:"action"`
		OnExitCodes *struct {
			ContainerName string `yaml:"containerName"`
			Operator      string `yaml:"operator"`
			Values        []int  `yaml:"values"`
		} `yaml:"onExitCodes"`
	} `yaml:"rules"`
}

// checkFailJob checks that a Job's pod failure policy ends it on exactly
// the exit codes docs/reference.md gives for findings and configuration
// errors (codes), and retries the rest.
func checkFailJob(t *testing.T, kind string, pf podFailurePolicy, codes map[int]string) {
	t.Helper()
	var failJob []int
	for _, r := range pf.Rules {
		if r.OnExitCodes == nil {
			continue
		}
		if r.OnExitCodes.ContainerName != "lossaudit" || r.OnExitCodes.Operator != "In" {
			t.Errorf("%s: podFailurePolicy rule %+v: want containerName lossaudit, operator In", kind, r.OnExitCodes)
		}
		if r.Action == "FailJob" {
			failJob = append(failJob, r.OnExitCodes.Values...)
		}
	}
	slices.Sort(failJob)
	if !slices.Equal(failJob, []int{1, 2}) {
		t.Errorf("%s: podFailurePolicy fails the Job on exit codes %v, want the documented 1 (findings) and 2 (configuration error)", kind, failJob)
	}
	for _, c := range failJob {
		if _, ok := codes[c]; !ok {
			t.Errorf("%s: podFailurePolicy names exit code %d, which docs/reference.md does not list", kind, c)
		}
	}
}

type podTemplate struct {
	Spec struct {
		RestartPolicy   string `yaml:"restartPolicy"`
		SecurityContext struct {
			RunAsNonRoot bool `yaml:"runAsNonRoot"`
		} `yaml:"securityContext"`
		Containers []struct {
			Name            string   `yaml:"name"`
			Args            []string `yaml:"args"`
			SecurityContext struct {
				ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
			} `yaml:"securityContext"`
			Env []struct {
				Name string `yaml:"name"`
			} `yaml:"env"`
			EnvFrom []struct {
				SecretRef *struct {
					Name string `yaml:"name"`
				} `yaml:"secretRef"`
			} `yaml:"envFrom"`
			LivenessProbe  *probe `yaml:"livenessProbe"`
			ReadinessProbe *probe `yaml:"readinessProbe"`
			VolumeMounts   []struct {
				Name      string `yaml:"name"`
				MountPath string `yaml:"mountPath"`
				ReadOnly  bool   `yaml:"readOnly"`
			} `yaml:"volumeMounts"`
		} `yaml:"containers"`
		Volumes []struct {
			Name      string                 `yaml:"name"`
			ConfigMap *struct{ Name string } `yaml:"configMap"`
			Secret    *struct {
				SecretName string `yaml:"secretName"`
			} `yaml:"secret"`
			PersistentVolumeClaim *struct {
				ClaimName string `yaml:"claimName"`
			} `yaml:"persistentVolumeClaim"`
			EmptyDir any `yaml:"emptyDir"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

// probe is a container probe: which check it makes.
type probe struct {
	HTTPGet   any `yaml:"httpGet"`
	TCPSocket any `yaml:"tcpSocket"`
}

// render runs helm template on the chart with a values file.
func render(t *testing.T, helm, values string) []manifest {
	t.Helper()
	out := run(t, helm, "template", "t", chartDir, "-f", values)
	var ms []manifest
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: rendered manifests: %v", values, err)
		}
		if m.Kind != "" {
			ms = append(ms, m)
		}
	}
	return ms
}

// documentedExitCodes reads docs/reference.md's exit code table: code to meaning.
func documentedExitCodes(t *testing.T) map[int]string {
	t.Helper()
	ref, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(ref)
	i := strings.Index(sec, "## Exit codes")
	if i < 0 {
		t.Fatal("docs/reference.md has no Exit codes section")
	}
	sec = sec[i:]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	codes := map[int]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\d+)` \\| (.*) \\|$").FindAllStringSubmatch(sec, -1) {
		n, _ := strconv.Atoi(m[1])
		codes[n] = m[2]
	}
	return codes
}

// TestHelmChart: helm lint passes with every value set in the chart's ci/
// directory, and what helm template renders is what docs/reconcile.md
// asks for: the podFailurePolicy ends the Job on exactly the exit codes
// docs/reference.md gives for "findings" and "configuration error" (3,
// could not complete, is retried), one run at a time, every path
// audit.yaml and the arguments name is inside the volume meant for it,
// non-root with a read-only root filesystem, and lossaudit accepts the
// rendered audit.yaml.
func TestHelmChart(t *testing.T) {
	helm := tool(t, "helm", helmHint)
	codes := documentedExitCodes(t)
	if !strings.Contains(codes[1], "findings reported") || !strings.Contains(codes[2], "configuration error") ||
		!strings.Contains(codes[3], "could not complete") {
		t.Fatalf("docs/reference.md's exit codes changed meaning: %v", codes)
	}
	valueSets, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil || len(valueSets) < 3 {
		t.Fatalf("value sets in %s/ci: %v %v", chartDir, valueSets, err)
	}
	workloads := map[string]int{}
	for _, values := range valueSets {
		t.Run(filepath.Base(values), func(t *testing.T) {
			run(t, helm, "lint", "--strict", chartDir, "-f", values)
			ms := render(t, helm, values)
			var auditYAML string
			files := map[string]bool{}
			secretKeys := map[string]bool{}
			for _, m := range ms {
				switch m.Kind {
				case "ConfigMap":
					auditYAML = m.Data["audit.yaml"]
					for k := range m.Data {
						files[filepath.Join(configDir, k)] = true
					}
				case "Secret":
					for k := range m.StringData {
						secretKeys[k] = true
					}
				}
			}
			if auditYAML == "" {
				t.Fatal("no ConfigMap with audit.yaml")
			}
			var cfg struct {
				Kafka struct {
					ClientProperties string `yaml:"client_properties"`
				}
				Pipeline struct {
					TopologyFile string `yaml:"topology_file"`
				}
				Store  struct{ Dir string }
				Report struct{ CSV, JSON, HTML string }
				Watch  struct {
					Listen        string
					WebConfigFile string `yaml:"web_config_file"`
				}
			}
			if err := yaml.Unmarshal([]byte(auditYAML), &cfg); err != nil {
				t.Fatalf("audit.yaml: %v", err)
			}
			if cfg.Kafka.ClientProperties == "" && cfg.Watch.WebConfigFile == "" {
				checkLoads(t, auditYAML) // (files on the Secret's volume do not exist here)
			}
			if p := cfg.Watch.WebConfigFile; p != "" && (p != secretDir+"/web-config.yml" || (len(secretKeys) > 0 && !secretKeys["web-config.yml"])) {
				t.Errorf("watch.web_config_file %q is not the Secret's web-config.yml (keys %v)", p, secretKeys)
			}
			for _, m := range ms {
				switch m.Kind {
				case "CronJob":
					workloads["CronJob"]++
					if m.Spec.ConcurrencyPolicy != "Forbid" {
						t.Errorf("CronJob: concurrencyPolicy %q, want Forbid", m.Spec.ConcurrencyPolicy)
					}
					js := m.Spec.JobTemplate.Spec
					checkFailJob(t, "CronJob", js.PodFailurePolicy, codes)
					if js.Template.Spec.RestartPolicy != "Never" {
						t.Errorf("CronJob: restartPolicy %q, want Never (podFailurePolicy requires it)", js.Template.Spec.RestartPolicy)
					}
					checkPod(t, "CronJob", js.Template, cfg.Store.Dir, files, secretKeys, auditYAML)
					if js.CompletionMode != "" {
						workloads["Indexed CronJob"]++
						checkShardedCronJob(t, js.CompletionMode, js.Completions, js.Parallelism, js.BackoffLimitPerIndex, js.Template)
					}
				case "Job":
					workloads["Job"]++
					checkShardedJob(t, m, codes)
					checkPod(t, "Job", m.Spec.Template, cfg.Store.Dir, files, secretKeys, auditYAML)
				case "Deployment":
					workloads["Deployment"]++
					if m.Spec.Strategy.Type != "Recreate" || m.Spec.Replicas == nil || *m.Spec.Replicas != 1 {
						t.Errorf("Deployment: strategy %q, replicas %v, want Recreate and 1", m.Spec.Strategy.Type, m.Spec.Replicas)
					}
					if !strings.HasPrefix(cfg.Watch.Listen, "0.0.0.0:") {
						t.Errorf("watch.listen %q: the Service cannot reach it", cfg.Watch.Listen)
					}
					checkPod(t, "Deployment", m.Spec.Template, cfg.Store.Dir, files, secretKeys, auditYAML)
					// Behind a web configuration the kubelet may lack the
					// credentials /healthz asks for: the probes check the
					// listener instead of failing forever.
					for _, c := range m.Spec.Template.Spec.Containers {
						for _, pr := range []*probe{c.LivenessProbe, c.ReadinessProbe} {
							if pr == nil || (cfg.Watch.WebConfigFile != "") != (pr.TCPSocket != nil) || (cfg.Watch.WebConfigFile == "") != (pr.HTTPGet != nil) {
								t.Errorf("Deployment: probe %+v with watch.web_config_file %q: want httpGet /healthz without one, tcpSocket with one", pr, cfg.Watch.WebConfigFile)
							}
						}
					}
				case "NetworkPolicy":
					workloads["NetworkPolicy"]++
					if !slices.Equal(m.Spec.PolicyTypes, []string{"Ingress"}) {
						t.Errorf("NetworkPolicy: policyTypes %v, want [Ingress]", m.Spec.PolicyTypes)
					}
					for _, in := range m.Spec.Ingress {
						if len(in.From) == 0 {
							t.Errorf("NetworkPolicy: an ingress rule without from admits every source: %+v", m.Spec.Ingress)
						}
					}
				}
			}
		})
	}
	if workloads["CronJob"] == 0 || workloads["Deployment"] == 0 || workloads["NetworkPolicy"] == 0 || workloads["Job"] == 0 || workloads["Indexed CronJob"] == 0 {
		t.Errorf("the value sets rendered %v: want a CronJob, an Indexed one, a Deployment, a NetworkPolicy and a Job", workloads)
	}
}

// checkShardedCronJob checks the sharded reconcile steps' CronJob
// (docs/scale.md#sharded-reconcile-steps): each Job Indexed with every
// index at once and a failed index retried alone, the shard directory and
// the states on the volume, kept from step to step, the Job's uid as
// --shard-job.
func checkShardedCronJob(t *testing.T, mode string, completions, parallelism, perIndex *int, pod podTemplate) {
	t.Helper()
	if mode != "Indexed" || completions == nil || parallelism == nil || *parallelism != *completions || perIndex == nil {
		t.Errorf("CronJob: completionMode %q, completions %v, parallelism %v, backoffLimitPerIndex %v: want Indexed, parallelism = completions, a per-index limit",
			mode, completions, parallelism, perIndex)
		return
	}
	c := pod.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	want := fmt.Sprintf("reconcile -c /etc/lossaudit/audit.yaml -q --shards %d --shard-dir /var/lib/lossaudit/shards --store-dir /var/lib/lossaudit/store --shard-job $(JOB_UID)", *completions)
	if !strings.Contains(args, want) {
		t.Errorf("CronJob: args %q lack %q", args, want)
	}
	if !slices.ContainsFunc(c.Env, func(e struct {
		Name string `yaml:"name"`
	}) bool {
		return e.Name == "JOB_UID"
	}) {
		t.Errorf("CronJob: no JOB_UID variable for --shard-job $(JOB_UID)")
	}
}

// checkShardedJob checks the sharded audit's Indexed Job (docs/scale.md):
// every index at once (a reduce waits for every map), a failed index
// retried alone, the Job ended on findings and configuration errors, the
// shard directory the Job's own on the shared volume, each pod's index in
// its emptyDir.
func checkShardedJob(t *testing.T, m manifest, codes map[int]string) {
	t.Helper()
	s := m.Spec
	if s.CompletionMode != "Indexed" || s.Completions == nil || s.Parallelism == nil || *s.Parallelism != *s.Completions || s.BackoffLimitPerIndex == nil {
		t.Errorf("Job: completionMode %q, completions %v, parallelism %v, backoffLimitPerIndex %v: want Indexed, parallelism = completions, a per-index limit",
			s.CompletionMode, s.Completions, s.Parallelism, s.BackoffLimitPerIndex)
	}
	checkFailJob(t, "Job", s.PodFailurePolicy, codes)
	if s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("Job: restartPolicy %q, want Never (podFailurePolicy requires it)", s.Template.Spec.RestartPolicy)
	}
	c := s.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	want := fmt.Sprintf("--shards %d --shard-dir /var/lib/lossaudit/shards/$(JOB_UID) --store-dir /tmp/store", *s.Completions)
	if strings.Contains(args, "s3://") {
		// ci/sharded-audit-s3-values.yaml: the shard directory in the
		// bucket (the prefix's slashes trimmed), MinIO's endpoint and path
		// style, the credentials from the Secret as environment (never an
		// argument), no volume of the Job's own.
		want = fmt.Sprintf("--shards %d --shard-dir s3://audits/orders/$(JOB_UID) --shard-s3-endpoint http://minio.minio:9000 --shard-s3-path-style --store-dir /tmp/store", *s.Completions)
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "lossaudit-s3" {
			t.Errorf("Job: envFrom %+v, want the Secret lossaudit-s3 (shardedAudit.s3.credentialsSecret)", c.EnvFrom)
		}
		if strings.Contains(args, "AWS_") {
			t.Errorf("Job: args %q name a credential", args)
		}
		for _, v := range s.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != "lossaudit-reports" {
				t.Errorf("Job: volume %s on claim %s: with S3 only the reports' existing claim is mounted", v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	if !strings.Contains(args, want) {
		t.Errorf("Job: args %q lack %q", args, want)
	}
	// ci/sharded-audit-values.yaml sets poll and keepAttempts; the other
	// value sets leave the sharded audit off.
	if want := "--shard-poll 5s --shard-keep-attempts"; !strings.Contains(args, want) {
		t.Errorf("Job: args %q lack %q (shardedAudit.poll, shardedAudit.keepAttempts)", args, want)
	}
	if !slices.ContainsFunc(s.Template.Spec.Containers[0].Env, func(e struct {
		Name string `yaml:"name"`
	}) bool {
		return e.Name == "JOB_UID"
	}) {
		t.Errorf("Job: no JOB_UID variable for the shard directory's $(JOB_UID)")
	}
}

// checkPod checks the lossaudit container of a pod: the paths audit.yaml
// and its arguments name are under the volumes meant for them.
func checkPod(t *testing.T, kind string, pod podTemplate, storeDir string, files, secretKeys map[string]bool, auditYAML string) {
	t.Helper()
	if !pod.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: runAsNonRoot is not set", kind)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "lossaudit" {
		t.Fatalf("%s: containers %+v, want one named lossaudit", kind, pod.Spec.Containers)
	}
	c := pod.Spec.Containers[0]
	if !c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not set", kind)
	}
	volumes := map[string]string{} // volume name -> what it is
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			volumes[v.Name] = "configMap"
		case v.Secret != nil:
			volumes[v.Name] = "secret"
		case v.PersistentVolumeClaim != nil:
			volumes[v.Name] = "pvc"
		default:
			volumes[v.Name] = "emptyDir"
		}
	}
	// mountOf returns the kind of volume path is on and its mount point.
	mountOf := func(path string) (string, string, bool) {
		best, kind, ro := "", "", false
		for _, m := range c.VolumeMounts {
			if (path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/")) && len(m.MountPath) > len(best) {
				best, kind, ro = m.MountPath, volumes[m.Name], m.ReadOnly
			}
		}
		return kind, best, ro
	}
	var cfgFile, metricsFile string
	for i, a := range c.Args {
		if i+1 < len(c.Args) && (a == "-c" || a == "--config") {
			cfgFile = c.Args[i+1]
		}
		if i+1 < len(c.Args) && a == "--metrics-file" {
			metricsFile = c.Args[i+1]
		}
	}
	if !files[cfgFile] || !strings.HasSuffix(cfgFile, "/audit.yaml") {
		t.Errorf("%s: -c %q is not the ConfigMap's audit.yaml", kind, cfgFile)
	}
	if k, _, _ := mountOf(cfgFile); k != "configMap" {
		t.Errorf("%s: %s is not on the ConfigMap's volume (%q)", kind, cfgFile, k)
	}
	var cfg struct {
		Kafka struct {
			ClientProperties string `yaml:"client_properties"`
		}
		Pipeline struct {
			TopologyFile string `yaml:"topology_file"`
		}
		Store  struct{ Dir string }
		Report struct{ CSV, JSON, HTML string }
	}
	if err := yaml.Unmarshal([]byte(auditYAML), &cfg); err != nil {
		t.Fatal(err)
	}
	writable := map[string]string{"store.dir": cfg.Store.Dir, "report.csv": cfg.Report.CSV, "report.json": cfg.Report.JSON,
		"report.html": cfg.Report.HTML}
	if kind == "CronJob" {
		writable["--metrics-file"] = metricsFile
	}
	for key, p := range writable {
		k, mount, ro := mountOf(p)
		if p == "" || k != "pvc" || ro {
			t.Errorf("%s: %s %q is not on the writable PersistentVolumeClaim (%q, %q)", kind, key, p, k, mount)
		}
		// Report files are written next to a temporary file in their
		// directory, which lossaudit does not create: the mount itself.
		if key != "store.dir" && filepath.Dir(p) != mount {
			t.Errorf("%s: %s %q is not directly in the volume %s", kind, key, p, mount)
		}
	}
	if p := cfg.Pipeline.TopologyFile; p != "" && !files[p] {
		t.Errorf("%s: pipeline.topology_file %q is not a file of the ConfigMap (%v)", kind, p, files)
	}
	if p := cfg.Kafka.ClientProperties; p != "" {
		k, mount, _ := mountOf(p)
		if k != "secret" || filepath.Base(p) != "client.properties" || filepath.Dir(p) != mount {
			t.Errorf("%s: kafka.client_properties %q is not the Secret's client.properties (%q at %q)", kind, p, k, mount)
		}
		if len(secretKeys) > 0 && !secretKeys["client.properties"] {
			t.Errorf("%s: the Secret has no client.properties: %v", kind, secretKeys)
		}
	}
	for _, e := range c.Env {
		if kind == "Job" && (e.Name == "JOB_UID" || e.Name == "AWS_REGION") {
			continue // the sharded audit's run: its shard directory, its S3 bucket's region
		}
		if kind == "CronJob" && e.Name == "JOB_UID" && slices.Contains(c.Args, "--shard-job") {
			continue // the sharded reconcile's Job: its --shard-job
		}
		if e.Name != config.EnvName("schema.registry_username") && e.Name != config.EnvName("schema.registry_password") {
			t.Errorf("%s: environment variable %s is not one lossaudit reads for the registry's credentials", kind, e.Name)
		}
	}
	if k, _, _ := mountOf("/tmp/x"); k != "emptyDir" {
		t.Errorf("%s: /tmp is not writable (%q) on a read-only root filesystem", kind, k)
	}
}

// checkLoads loads the rendered audit.yaml with lossaudit's own loader:
// every key known, every value valid, the watch keys too.
func checkLoads(t *testing.T, auditYAML string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "audit.yaml")
	if err := os.WriteFile(f, []byte(auditYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{File: f, IgnoreEnv: testbedenv.Is})
	if err == nil {
		err = cfg.ValidateWatch()
	}
	if err != nil {
		var buf bytes.Buffer
		buf.WriteString(auditYAML)
		t.Errorf("lossaudit does not accept the rendered audit.yaml: %v\n%s", err, buf.String())
	}
}
