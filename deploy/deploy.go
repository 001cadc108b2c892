// Package deploy holds the Kubernetes manifests of structgen serve (the
// *.yaml files of this folder, embedded) and reads them into the
// Kubernetes API types, so that tests can hold them to the server they
// run:
//
//   - Load decodes every document strictly (sigs.k8s.io/yaml into
//     k8s.io/api types with unknown and duplicate fields rejected), so a
//     misspelled field is an error, not a silently ignored line;
//   - Check states the invariants: the Service and the probes reach the
//     port the server listens on, readiness and liveness ask /health, the
//     model path lies on a mounted read-only volume, the API key comes
//     from a Secret, the grace period covers preStop and --drain-timeout, the
//     autoscaler scales the Deployment on structgen_queue_depth.
//
// Nothing here talks to a cluster; none was available to run them on.
// The package is only for tests and tools; the server does not import it.
package deploy

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// Names the manifests agree on with the server.
const (
	// ContainerName is the server's container in the Deployment.
	ContainerName = "structgen"
	// HealthPath answers 200 once the model is loaded (structgen serve).
	HealthPath = "/health"
	// QueueMetric is the gauge of requests waiting for a sequence, the
	// autoscaling signal (structgen serve's GET /metrics).
	QueueMetric = "structgen_queue_depth"
	// APIKeyEnv is the environment variable structgen serve's --api-key
	// reads when the flag is not given.
	APIKeyEnv = "STRUCTGEN_API_KEY"
	// ShutdownMargin is the time Check requires between the end of the
	// longest drain and the kill at the end of the grace period: the
	// server's exit after its drain (closing the model, flushing logs).
	ShutdownMargin = 5 * time.Second
	// MinCellsPerSequence is the least context (--ctx / --parallel) Check
	// accepts per sequence: a chat prompt and a JSON answer of a few
	// hundred tokens each.
	MinCellsPerSequence = 512
)

// Manifests are the objects of the folder, one of each kind.
type Manifests struct {
	Deployment *appsv1.Deployment
	Service    *corev1.Service
	PDB        *policyv1.PodDisruptionBudget
	HPA        *autoscalingv2.HorizontalPodAutoscaler
	Models     *corev1.PersistentVolumeClaim
}

// Load decodes the embedded manifests.
func Load() (*Manifests, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	m := new(Manifests)
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		if err := m.add(name, data); err != nil {
			return nil, err
		}
	}
	return m, m.complete()
}

// Decode decodes the documents of one YAML file (name is for errors) into
// Manifests; each kind may appear once.
func Decode(name string, data []byte) (*Manifests, error) {
	m := new(Manifests)
	if err := m.add(name, data); err != nil {
		return nil, err
	}
	return m, nil
}

// docSeparator is YAML's document marker on a line of its own.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func (m *Manifests) add(name string, data []byte) error {
	line := 1
	for _, doc := range docSeparator.Split(string(data), -1) {
		start := line
		line += strings.Count(doc, "\n")
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		if err := m.decode([]byte(doc)); err != nil {
			return fmt.Errorf("%s: document at line %d: %w", name, start, err)
		}
	}
	return nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for l := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// decode reads the document's apiVersion and kind, then decodes it
// strictly into that type.
func (m *Manifests) decode(doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	var dst any
	var err error
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		dst, err = slot(&m.Deployment)
	case "v1 Service":
		dst, err = slot(&m.Service)
	case "policy/v1 PodDisruptionBudget":
		dst, err = slot(&m.PDB)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		dst, err = slot(&m.HPA)
	case "v1 PersistentVolumeClaim":
		dst, err = slot(&m.Models)
	default:
		return fmt.Errorf("apiVersion %q kind %q: not a kind this folder holds", head.APIVersion, head.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", head.Kind, err)
	}
	// YAML's duplicate keys fail the conversion; unknown and repeated JSON
	// fields fail the decoding with their path, as the API server's strict
	// field validation reports them.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, dst, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// slot allocates *p for a document, once.
func slot[T any](p **T) (*T, error) {
	if *p != nil {
		return nil, errors.New("a second one")
	}
	*p = new(T)
	return *p, nil
}

func (m *Manifests) complete() error {
	var missing []string
	for kind, p := range map[string]bool{
		"Deployment": m.Deployment != nil, "Service": m.Service != nil,
		"PodDisruptionBudget": m.PDB != nil, "HorizontalPodAutoscaler": m.HPA != nil,
		"PersistentVolumeClaim": m.Models != nil,
	} {
		if !p {
			missing = append(missing, kind)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		return fmt.Errorf("deploy: no %s", strings.Join(missing, ", "))
	}
	return nil
}

// Server returns the server's container.
func (m *Manifests) Server() (*corev1.Container, error) {
	cs := m.Deployment.Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == ContainerName })
	if i < 0 {
		return nil, fmt.Errorf("Deployment %s: no container %q", m.Deployment.Name, ContainerName)
	}
	return &cs[i], nil
}

// Flags returns the server container's command-line flags (--name=value
// or --name value) by name without dashes, after the subcommand.
func Flags(args []string) (sub string, flags map[string]string, err error) {
	flags = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			if i == 0 {
				sub = a
				continue
			}
			return "", nil, fmt.Errorf("argument %d %q is not a flag", i, a)
		}
		name, value, ok := strings.Cut(a[2:], "=")
		if !ok {
			if i+1 == len(args) || strings.HasPrefix(args[i+1], "--") {
				return "", nil, fmt.Errorf("flag %s has no value", a)
			}
			i++
			value = args[i]
		}
		if _, dup := flags[name]; dup {
			return "", nil, fmt.Errorf("flag --%s given twice", name)
		}
		flags[name] = value
	}
	return sub, flags, nil
}

// DrainBudget is the longest drain the pod's shutdown allows the server:
// the grace period less the preStop sleep and ShutdownMargin.
func (m *Manifests) DrainBudget() (time.Duration, error) {
	spec := m.Deployment.Spec.Template.Spec
	if spec.TerminationGracePeriodSeconds == nil {
		return 0, errors.New("terminationGracePeriodSeconds is not set (the default, 30 s, is shorter than a generation may run)")
	}
	c, err := m.Server()
	if err != nil {
		return 0, err
	}
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	var pre time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if c.Lifecycle.PreStop.Sleep == nil {
			return 0, errors.New("preStop is not a sleep action: its duration is unknown")
		}
		pre = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	return grace - pre - ShutdownMargin, nil
}

// Check returns every broken invariant (or that a kind is missing).
func (m *Manifests) Check() []error {
	if err := m.complete(); err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	d := m.Deployment
	pod := d.Spec.Template
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchExpressions) > 0 || !subset(d.Spec.Selector.MatchLabels, pod.Labels) {
		fail("Deployment %s: the selector must be matchLabels that the pod template's labels %v carry", d.Name, pod.Labels)
	}
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 2 {
		fail("Deployment %s: %d replica(s): a rollout or a node drain leaves no server", d.Name, *d.Spec.Replicas)
	}
	c, err := m.Server()
	if err != nil {
		return append(errs, err)
	}
	sub, flags, err := Flags(c.Args)
	if err != nil {
		return append(errs, fmt.Errorf("container %s args: %w", c.Name, err))
	}
	if sub != "serve" {
		fail("container %s: args start with %q, want the serve subcommand", c.Name, sub)
	}
	for _, f := range []string{"addr", "model", "parallel", "ctx", "max-queue", "grammar-cache", "drain-timeout"} {
		if _, ok := flags[f]; !ok {
			fail("container %s: no --%s", c.Name, f)
		}
	}
	nums := map[string]int64{}
	for _, f := range []string{"parallel", "ctx", "max-queue", "grammar-cache"} {
		if v, ok := flags[f]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				fail("container %s: --%s=%s is not a positive integer", c.Name, f, v)
			}
			nums[f] = n
		}
	}
	if nums["parallel"] > 0 && nums["ctx"] > 0 && nums["ctx"]/nums["parallel"] < MinCellsPerSequence {
		fail("container %s: --ctx=%d over --parallel=%d leaves each sequence fewer than %d cells", c.Name, nums["ctx"], nums["parallel"], MinCellsPerSequence)
	}

	// The port: --addr, the container port, the Service, the probes.
	var port *corev1.ContainerPort
	if host, p, err := net.SplitHostPort(flags["addr"]); err != nil {
		fail("container %s: --addr=%s: %v", c.Name, flags["addr"], err)
	} else {
		if host != "0.0.0.0" && host != "" && host != "::" {
			fail("container %s: --addr=%s listens on %s only: the kubelet's probes and the Service reach the pod's IP", c.Name, flags["addr"], host)
		}
		for i := range c.Ports {
			if strconv.Itoa(int(c.Ports[i].ContainerPort)) == p {
				port = &c.Ports[i]
			}
		}
		if port == nil {
			fail("container %s: no containerPort %s for --addr=%s", c.Name, p, flags["addr"])
		}
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
	}{{"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}, {"startupProbe", c.StartupProbe}} {
		switch {
		case pr.probe == nil || pr.probe.HTTPGet == nil:
			fail("container %s: %s is not an httpGet probe", c.Name, pr.name)
		case pr.probe.HTTPGet.Path != HealthPath:
			fail("container %s: %s asks %s, want %s", c.Name, pr.name, pr.probe.HTTPGet.Path, HealthPath)
		case port != nil && !portMatches(pr.probe.HTTPGet.Port.String(), *port):
			fail("container %s: %s asks port %s, the server listens on %d", c.Name, pr.name, pr.probe.HTTPGet.Port.String(), port.ContainerPort)
		}
	}
	if ann := pod.Annotations["prometheus.io/port"]; port != nil && ann != "" && ann != strconv.Itoa(int(port.ContainerPort)) {
		fail("pod annotation prometheus.io/port=%s, the server listens on %d", ann, port.ContainerPort)
	}
	s := m.Service
	if !subset(s.Spec.Selector, pod.Labels) || len(s.Spec.Selector) == 0 {
		fail("Service %s: selector %v does not select the pods (labels %v)", s.Name, s.Spec.Selector, pod.Labels)
	}
	if len(s.Spec.Ports) == 0 {
		fail("Service %s: no ports", s.Name)
	}
	for _, sp := range s.Spec.Ports {
		if port != nil && !portMatches(sp.TargetPort.String(), *port) {
			fail("Service %s: port %d targets %s, the server listens on %d", s.Name, sp.Port, sp.TargetPort.String(), port.ContainerPort)
		}
	}
	if p := m.PDB; p.Spec.Selector == nil || !subset(p.Spec.Selector.MatchLabels, pod.Labels) || len(p.Spec.Selector.MatchLabels) == 0 {
		fail("PodDisruptionBudget %s: does not select the pods", m.PDB.Name)
	}

	// The model: a path on a read-only volume from the claim.
	model := flags["model"]
	var mount *corev1.VolumeMount
	for i, vm := range c.VolumeMounts {
		if rel, ok := strings.CutPrefix(path.Clean(model), strings.TrimSuffix(vm.MountPath, "/")+"/"); ok && rel != "" {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		fail("container %s: --model=%s is on no mounted volume", c.Name, model)
	} else {
		if !mount.ReadOnly {
			fail("container %s: the model volume %s is mounted writable", c.Name, mount.Name)
		}
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
		switch {
		case i < 0:
			fail("container %s: volume %s is mounted but not defined", c.Name, mount.Name)
		case pod.Spec.Volumes[i].PersistentVolumeClaim != nil && pod.Spec.Volumes[i].PersistentVolumeClaim.ClaimName != m.Models.Name:
			fail("volume %s claims %s, the folder's claim is %s", mount.Name, pod.Spec.Volumes[i].PersistentVolumeClaim.ClaimName, m.Models.Name)
		}
	}

	// The API key: from a Secret, through APIKeyEnv or --api-key=$(VAR);
	// never a literal.
	keyVar := APIKeyEnv
	if key, ok := flags["api-key"]; ok {
		name, isRef := strings.CutPrefix(key, "$(")
		name, isRef2 := strings.CutSuffix(name, ")")
		if !isRef || !isRef2 {
			fail("container %s: --api-key is a literal; give the key from a Secret in %s", c.Name, APIKeyEnv)
		}
		keyVar = name
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == keyVar }); i < 0 {
		fail("container %s: no %s: the API is open to anyone who reaches the Service", c.Name, keyVar)
	} else if c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil {
		fail("container %s: env %s is not from a Secret", c.Name, keyVar)
	}

	// Shutdown: the grace period covers preStop, the drain and a margin,
	// and the liveness probe cannot kill a draining server.
	if v, ok := flags["drain-timeout"]; ok {
		drain, err := time.ParseDuration(v)
		budget, berr := m.DrainBudget()
		switch {
		case err != nil || drain <= 0:
			fail("container %s: --drain-timeout=%s is not a positive duration", c.Name, v)
		case berr != nil:
			fail("Deployment %s: %v", d.Name, berr)
		case drain > budget:
			fail("Deployment %s: --drain-timeout=%v, but the grace period less preStop and %v leaves %v", d.Name, drain, ShutdownMargin, budget)
		case c.LivenessProbe != nil:
			lp := c.LivenessProbe
			window := time.Duration(max(lp.PeriodSeconds, 10)*max(lp.FailureThreshold, 3)) * time.Second
			if window < drain {
				fail("container %s: the liveness probe fails after %v, before a drain of %v ends", c.Name, window, drain)
			}
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		fail("container %s: CPU and memory requests and a memory limit are required", c.Name)
	}
	for name, req := range c.Resources.Requests {
		if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
			fail("container %s: %s request %s above its limit %s", c.Name, name, req.String(), lim.String())
		}
	}

	// Autoscaling on the queue.
	h := m.HPA
	if ref := h.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != d.Name || ref.APIVersion != "apps/v1" {
		fail("HorizontalPodAutoscaler %s: scales %s %s, not Deployment %s", h.Name, ref.Kind, ref.Name, d.Name)
	}
	if !slices.ContainsFunc(h.Spec.Metrics, func(ms autoscalingv2.MetricSpec) bool {
		return ms.Type == autoscalingv2.PodsMetricSourceType && ms.Pods != nil && ms.Pods.Metric.Name == QueueMetric
	}) {
		fail("HorizontalPodAutoscaler %s: no Pods metric %s", h.Name, QueueMetric)
	}
	if h.Spec.MinReplicas != nil && *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		fail("HorizontalPodAutoscaler %s: minReplicas %d above maxReplicas %d", h.Name, *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	return errs
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// portMatches reports whether a port reference (number or name) is p.
func portMatches(ref string, p corev1.ContainerPort) bool {
	return ref == p.Name && p.Name != "" || ref == strconv.Itoa(int(p.ContainerPort))
}
