package deploy_test

import (
	"bytes"
	"net"
	"net/http"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tablejournal/tablejournal/deploy/deploytest"
	"github.com/tablejournal/tablejournal/deploy/ociimage"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// workload is a container of the manifests with the command it runs.
type workload struct {
	name      string
	pod       corev1.PodTemplateSpec
	container corev1.Container
	// command is the binary the container runs and its subcommand, if
	// any: what --help is asked of.
	command []string
	// args are the container's flags, after the subcommand.
	args []string
}

// workloads are the containers of every Deployment and CronJob, the
// projector's first.
func workloads(t *testing.T, m *manifests) []workload {
	t.Helper()
	type pod struct {
		name string
		pod  corev1.PodTemplateSpec
	}
	pods := []pod{{"Deployment " + projectorName, named(t, m.deployments, projectorName).Spec.Template}}
	for _, d := range m.deployments {
		if d.Name != projectorName {
			pods = append(pods, pod{"Deployment " + d.Name, d.Spec.Template})
		}
	}
	for _, c := range m.cronJobs {
		pods = append(pods, pod{"CronJob " + c.Name, c.Spec.JobTemplate.Spec.Template})
	}
	var out []workload
	for _, p := range pods {
		out = append(out, workloadOf(t, p.name, p.pod))
	}
	return out
}

// workloadOf is the one container of pod, named name in failures.
func workloadOf(t *testing.T, name string, pod corev1.PodTemplateSpec) workload {
	t.Helper()
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	entry := ociimage.Entrypoint
	if len(c.Command) > 0 {
		entry = c.Command[0]
	}
	if len(c.Command) > 1 || !slices.Contains(ociimage.Commands, strings.TrimPrefix(entry, "/")) || !strings.HasPrefix(entry, "/") {
		t.Fatalf("%s: command %q, want one of the image's commands /%v", name, c.Command, ociimage.Commands)
	}
	cmd := []string{filepath.Join(binDir, path.Base(entry))}
	args := c.Args
	if path.Base(entry) == "replay" {
		if len(args) == 0 {
			t.Fatalf("%s: replay with no subcommand", name)
		}
		cmd, args = append(cmd, args[0]), args[1:]
	}
	return workload{name, pod, c, cmd, args}
}

// helpOf is the --help of a command after args, which must parse: the
// flag set reads them before it meets --help.
func helpOf(t *testing.T, command []string, args ...string) string {
	t.Helper()
	full := append(append(slices.Clone(command[1:]), args...), "--help")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(command[0], full...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(command[0]), strings.Join(full, " "), err, stderr.String())
	}
	return stdout.String()
}

var (
	helpFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)( \S+)?$`)
	helpEnv  = regexp.MustCompile(`\(env ([A-Z0-9_]+)\)`)
)

// flagValues parses args as the command's flags, as its --help lists them:
// name to value ("true" for a bare boolean flag). An unknown flag, or
// anything not a flag, fails the test.
func flagValues(t *testing.T, w workload, help string) map[string]string {
	t.Helper()
	known := map[string]bool{} // name: takes a value
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		known[m[1]] = m[2] != ""
	}
	vals := map[string]string{}
	for i := 0; i < len(w.args); i++ {
		a := w.args[i]
		if !strings.HasPrefix(a, "-") {
			t.Fatalf("%s: argument %q is not a flag", w.name, a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := known[name]
		if !ok {
			t.Fatalf("%s: flag --%s is not one %s --help lists", w.name, name, filepath.Base(w.command[0]))
		}
		switch {
		case hasVal:
		case takesValue && i+1 < len(w.args):
			i++
			val = w.args[i]
		case takesValue:
			t.Fatalf("%s: flag --%s has no value", w.name, name)
		default:
			val = "true"
		}
		vals[name] = val
	}
	return vals
}

// TestFlagsAndEnvironment: every flag of each container is one its command
// takes, with a value it accepts; every environment variable is one the
// command reads (its --help names it), and comes from the Secret or the
// ConfigMap of deploy/ by a key they have.
func TestFlagsAndEnvironment(t *testing.T) {
	m := load(t)
	for _, w := range workloads(t, m) {
		t.Run(w.name, func(t *testing.T) {
			help := helpOf(t, w.command, w.args...)
			flagValues(t, w, help)
			reads := map[string]bool{}
			for _, m := range helpEnv.FindAllStringSubmatch(help, -1) {
				reads[m[1]] = true
			}
			if len(w.container.Env) == 0 {
				t.Fatal("no environment: the NATS connection comes from it")
			}
			for _, e := range w.container.Env {
				if !reads[e.Name] {
					t.Errorf("env %s: %s does not read it (its --help names %v)", e.Name, filepath.Base(w.command[0]), keys(reads))
				}
				checkEnvSource(t, m, e)
			}
		})
	}
}

// checkEnvSource fails unless e is a reference to a key of the Secret or
// ConfigMap of deploy/: no value in the manifest but for a literal.
func checkEnvSource(t *testing.T, m *manifests, e corev1.EnvVar) {
	t.Helper()
	switch {
	case e.ValueFrom == nil:
		if strings.Contains(e.Name, "NATS") || strings.Contains(e.Name, "PASSWORD") {
			t.Errorf("env %s: a literal; the connection comes from the Secret", e.Name)
		}
	case e.ValueFrom.SecretKeyRef != nil:
		r := e.ValueFrom.SecretKeyRef
		if _, ok := named(t, m.secrets, natsSecretName).StringData[r.Key]; r.Name != natsSecretName || !ok {
			t.Errorf("env %s: Secret %s key %s, not in nats-secret.example.yaml (%s)", e.Name, r.Name, r.Key, natsSecretName)
		}
	case e.ValueFrom.ConfigMapKeyRef != nil:
		r := e.ValueFrom.ConfigMapKeyRef
		if _, ok := named(t, m.configMaps, configMapName).Data[r.Key]; r.Name != configMapName || !ok {
			t.Errorf("env %s: ConfigMap %s key %s, not in configmap.yaml (%s)", e.Name, r.Name, r.Key, configMapName)
		}
	default:
		t.Errorf("env %s: from %+v; want a Secret or ConfigMap key", e.Name, e.ValueFrom)
	}
	if strings.Contains(e.Name, "NATS") && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef == nil {
		t.Errorf("env %s: the NATS connection comes from the Secret", e.Name)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestGracePeriodExceedsDrainTimeout: the kubelet's SIGKILL comes after
// the projector's --drain-timeout, so a stopping projector finishes its
// batch and releases its shards.
func TestGracePeriodExceedsDrainTimeout(t *testing.T) {
	m := load(t)
	w := workloads(t, m)[0]
	drain, ok := flagValues(t, w, helpOf(t, w.command))["drain-timeout"]
	if !ok {
		t.Fatal("the projector's args do not set --drain-timeout: the grace period must be checked against it")
	}
	d, err := time.ParseDuration(drain)
	if err != nil || d <= 0 {
		t.Fatalf("--drain-timeout=%s: want a positive duration (%v)", drain, err)
	}
	grace := named(t, m.deployments, projectorName).Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil {
		t.Fatalf("no terminationGracePeriodSeconds: want more than --drain-timeout %s", d)
	}
	if g := time.Duration(*grace) * time.Second; g <= d {
		t.Errorf("terminationGracePeriodSeconds %d, want more than --drain-timeout %s", *grace, d)
	}
}

// metricsPort is the port of the projector's --metrics-addr in the
// manifest (flag or environment variable).
func metricsPort(t *testing.T, w workload, flags map[string]string) int {
	t.Helper()
	addr, ok := flags["metrics-addr"]
	for _, e := range w.container.Env {
		if e.Name == "TABLEJOURNAL_METRICS_ADDR" && !ok {
			addr, ok = e.Value, true
		}
	}
	if !ok {
		t.Fatal("the projector's metrics and health listener is off: no --metrics-addr")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--metrics-addr=%s: %v", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("--metrics-addr=%s: %v", addr, err)
	}
	return n
}

// containerPort resolves a probe's or a Service's port, by number or by
// name, to a port of the container.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return int(cp.ContainerPort)
		}
	}
	t.Fatalf("port %s is not a port of container %s (%+v)", p.String(), c.Name, c.Ports)
	return 0
}

// TestProbesAndScrape: the probes and the scrape target the port of the
// projector's --metrics-addr, and a projector started with the
// manifest's flags answers their paths with 200.
func TestProbesAndScrape(t *testing.T) {
	m := load(t)
	w := workloads(t, m)[0]
	flags := flagValues(t, w, helpOf(t, w.command))
	port := metricsPort(t, w, flags)
	c := w.container
	if c.ReadinessProbe == nil || c.LivenessProbe == nil {
		t.Fatal("the projector needs a readiness and a liveness probe")
	}
	ann := w.pod.Annotations
	paths := map[string]string{}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
	}{{"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}} {
		g := p.probe.HTTPGet
		if g == nil {
			t.Fatalf("%s probe: not an HTTP GET", p.what)
		}
		if got := containerPort(t, c, g.Port); got != port {
			t.Errorf("%s probe: port %d, --metrics-addr's is %d", p.what, got, port)
		}
		paths[p.what] = g.Path
	}
	if paths["readiness"] == paths["liveness"] {
		t.Errorf("readiness and liveness probe the same path %s", paths["readiness"])
	}
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(port) {
		t.Errorf("scrape annotations %v, want prometheus.io/scrape \"true\" and prometheus.io/port %d", ann, port)
	}
	paths["scrape"] = ann["prometheus.io/path"]
	for _, e := range named(t, m.serviceMonitors, projectorName).Spec.Endpoints {
		if e.Path != paths["scrape"] {
			t.Errorf("ServiceMonitor path %s, the annotation's %s", e.Path, paths["scrape"])
		}
	}

	// The manifest's flags, but for the listener: loopback, a free port.
	var args []string
	for _, a := range w.args {
		if !strings.HasPrefix(strings.TrimLeft(a, "-"), "metrics-addr") {
			args = append(args, a)
		}
	}
	p := deploytest.StartProjector(t, w.command[0], args...)
	ctx := journaltest.Context(t, time.Minute)
	for what, path := range paths {
		if !strings.HasPrefix(path, "/") {
			t.Fatalf("%s path %q", what, path)
		}
		p.WaitStatus(t, ctx, path, http.StatusOK)
	}
	p.Stop(t, ctx)
}
