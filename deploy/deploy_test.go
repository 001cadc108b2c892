package deploy

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func load(t *testing.T) *Manifests {
	t.Helper()
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestManifests: every manifest decodes strictly and holds the invariants.
func TestManifests(t *testing.T) {
	m := load(t)
	for _, err := range m.Check() {
		t.Error(err)
	}
	budget, err := m.DrainBudget()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the pod's shutdown leaves the server %v to drain", budget)
}

// TestStrict: a misspelled or repeated field, a document of an unknown
// kind and a second Deployment are errors naming the file and line.
func TestStrict(t *testing.T) {
	src, err := os.ReadFile("structgen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"misspelled field", "      terminationGracePeriodSeconds: 75", "      terminationGracePeriodSecond: 75", `unknown field "spec.template.spec.terminationGracePeriodSecond"`},
		{"field at the wrong level", "          imagePullPolicy: IfNotPresent", "          imagePullPolicy: IfNotPresent\n          replicas: 3", `unknown field "spec.template.spec.containers[0].replicas"`},
		{"repeated field", "  revisionHistoryLimit: 3", "  revisionHistoryLimit: 3\n  revisionHistoryLimit: 4", `key "revisionHistoryLimit" already set`},
		{"wrong type", "  replicas: 2", "  replicas: two", "cannot unmarshal"},
		{"unknown kind", "kind: PodDisruptionBudget", "kind: PodDisruptionBudgets", `kind "PodDisruptionBudgets": not a kind`},
		{"second Deployment", "---\napiVersion: v1\nkind: Service", "---\n" + strings.SplitN(doc, "---\n", 2)[0] + "---\napiVersion: v1\nkind: Service", "Deployment: a second one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(doc, tc.old) {
				t.Fatalf("structgen.yaml has no %q", tc.old)
			}
			_, err := Decode("structgen.yaml", []byte(strings.Replace(doc, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "structgen.yaml: document at line ") {
				t.Fatalf("got %v, want an error with the file, line and %q", err, tc.want)
			}
		})
	}
	m, err := Decode("structgen.yaml", src)
	if err != nil {
		t.Fatalf("the unchanged file: %v", err)
	}
	if errs := m.Check(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "no HorizontalPodAutoscaler") {
		t.Errorf("Check of one file: %v, want that the autoscaler is missing", errs)
	}
}

// TestCheck: each broken invariant is reported.
func TestCheck(t *testing.T) {
	server := func(m *Manifests) *corev1.Container {
		c, err := m.Server()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	setFlag := func(m *Manifests, name, value string) {
		c := server(m)
		for i, a := range c.Args {
			if strings.HasPrefix(a, "--"+name+"=") {
				c.Args[i] = "--" + name + "=" + value
				return
			}
		}
		t.Fatalf("no --%s", name)
	}
	for _, tc := range []struct {
		name   string
		change func(m *Manifests)
		want   string
	}{
		{"readiness path", func(m *Manifests) { server(m).ReadinessProbe.HTTPGet.Path = "/healthz" }, "readinessProbe asks /healthz"},
		{"liveness port", func(m *Manifests) { server(m).LivenessProbe.HTTPGet.Port = intstr.FromInt32(9090) }, "livenessProbe asks port 9090"},
		{"no startup probe", func(m *Manifests) { server(m).StartupProbe = nil }, "startupProbe is not an httpGet probe"},
		{"loopback address", func(m *Manifests) { setFlag(m, "addr", "127.0.0.1:8080") }, "listens on 127.0.0.1 only"},
		{"address off the port", func(m *Manifests) { setFlag(m, "addr", "0.0.0.0:9000") }, "no containerPort 9000"},
		{"service target", func(m *Manifests) { m.Service.Spec.Ports[0].TargetPort = intstr.FromString("metrics") }, "targets metrics"},
		{"service selector", func(m *Manifests) { m.Service.Spec.Selector = map[string]string{"app": "other"} }, "does not select the pods"},
		{"grace period", func(m *Manifests) { g := int64(60); m.Deployment.Spec.Template.Spec.TerminationGracePeriodSeconds = &g }, "--drain-timeout=1m0s, but the grace period less preStop and 5s leaves 45s"},
		{"drain", func(m *Manifests) { setFlag(m, "drain-timeout", "61s") }, "leaves 1m0s"},
		{"bad drain", func(m *Manifests) { setFlag(m, "drain-timeout", "soon") }, "--drain-timeout=soon is not a positive duration"},
		{"no grace period", func(m *Manifests) { m.Deployment.Spec.Template.Spec.TerminationGracePeriodSeconds = nil }, "terminationGracePeriodSeconds is not set"},
		{"liveness kills the drain", func(m *Manifests) { server(m).LivenessProbe.FailureThreshold = 3 }, "before a drain"},
		{"literal key", func(m *Manifests) { c := server(m); c.Args = append(c.Args, "--api-key=sk-123") }, "--api-key is a literal"},
		{"key through a flag", func(m *Manifests) { c := server(m); c.Args = append(c.Args, "--api-key=$(KEY)") }, "no KEY"},
		{"no key", func(m *Manifests) { server(m).Env = nil }, "no STRUCTGEN_API_KEY: the API is open"},
		{"key not from a Secret", func(m *Manifests) { server(m).Env[0].ValueFrom = nil; server(m).Env[0].Value = "sk-123" }, "is not from a Secret"},
		{"model off the volume", func(m *Manifests) { setFlag(m, "model", "/data/model.gguf") }, "is on no mounted volume"},
		{"writable model", func(m *Manifests) { server(m).VolumeMounts[0].ReadOnly = false }, "mounted writable"},
		{"bad parallel", func(m *Manifests) { setFlag(m, "parallel", "0") }, "--parallel=0 is not a positive integer"},
		{"tiny context", func(m *Manifests) { setFlag(m, "ctx", "1024") }, "fewer than 512 cells"},
		{"missing flag", func(m *Manifests) { c := server(m); c.Args = c.Args[:len(c.Args)-1] }, "no --drain-timeout"},
		{"no subcommand", func(m *Manifests) { c := server(m); c.Args = c.Args[1:] }, `args start with ""`},
		{"one replica", func(m *Manifests) { r := int32(1); m.Deployment.Spec.Replicas = &r }, "1 replica(s)"},
		{"request above limit", func(m *Manifests) {
			server(m).Resources.Requests[corev1.ResourceMemory] = server(m).Resources.Limits.Memory().DeepCopy()
			server(m).Resources.Limits = nil
		}, "a memory limit are required"},
		{"autoscaler metric", func(m *Manifests) { m.HPA.Spec.Metrics[0].Pods.Metric.Name = "queue_depth" }, "no Pods metric structgen_queue_depth"},
		{"autoscaler target", func(m *Manifests) { m.HPA.Spec.ScaleTargetRef.Name = "other" }, "not Deployment structgen"},
		{"prometheus port", func(m *Manifests) { m.Deployment.Spec.Template.Annotations["prometheus.io/port"] = "9090" }, "prometheus.io/port=9090"},
		{"claim", func(m *Manifests) { m.Models.Name = "models" }, "the folder's claim is models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := load(t)
			tc.change(m)
			errs := m.Check()
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("got %v, want an error with %q", errs, tc.want)
		})
	}
}

func TestFlags(t *testing.T) {
	sub, f, err := Flags([]string{"serve", "--addr", "0.0.0.0:1", "--model=/m/x.gguf"})
	if err != nil || sub != "serve" || f["addr"] != "0.0.0.0:1" || f["model"] != "/m/x.gguf" || len(f) != 2 {
		t.Fatalf("got %q %v %v", sub, f, err)
	}
	for _, args := range [][]string{{"serve", "--addr"}, {"serve", "--a=1", "--a=2"}, {"serve", "--a=1", "stray"}} {
		if _, _, err := Flags(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
