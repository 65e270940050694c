package deploy_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	natsTLSComponent  = "nats-tls"
	natsTLSSecretName = "tablejournal-nats-tls"
)

// component is the part of kustomize's Component the nats-tls example uses.
type component struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// natsTLSFlag is an arg the nats-tls component adds.
var natsTLSFlag = regexp.MustCompile(`^--(creds|tls-ca|tls-cert|tls-key)=`)

// patchPod applies a strategic-merge patch's pod template to pod as
// Kubernetes does for what the example patches: volumes merge by name,
// the container by name, its volumeMounts by mountPath and env by name,
// and its args (a list of strings) are replaced whole. A patch that would
// replace an existing volume, mount or variable fails the test: the
// example only adds.
func patchPod(t *testing.T, what string, pod *corev1.PodTemplateSpec, patch corev1.PodTemplateSpec) {
	t.Helper()
	for _, v := range patch.Spec.Volumes {
		if slices.ContainsFunc(pod.Spec.Volumes, func(o corev1.Volume) bool { return o.Name == v.Name }) {
			t.Fatalf("%s: the patch replaces volume %s", what, v.Name)
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, v)
	}
	for _, pc := range patch.Spec.Containers {
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == pc.Name })
		if i < 0 {
			t.Fatalf("%s: the patch names container %s, which the manifest lacks", what, pc.Name)
		}
		c := &pod.Spec.Containers[i]
		for _, a := range c.Args {
			if pc.Args != nil && !slices.Contains(pc.Args, a) {
				t.Errorf("%s: the patch's args drop %q of the manifest's: keep them in step", what, a)
			}
		}
		for _, a := range pc.Args {
			if !slices.Contains(c.Args, a) && !natsTLSFlag.MatchString(a) {
				t.Errorf("%s: the patch's args add %q, which is neither in the manifest nor a NATS credential or TLS flag", what, a)
			}
		}
		if pc.Args != nil {
			c.Args = pc.Args
		}
		for _, vm := range pc.VolumeMounts {
			if slices.ContainsFunc(c.VolumeMounts, func(o corev1.VolumeMount) bool { return o.MountPath == vm.MountPath }) {
				t.Fatalf("%s: the patch replaces the mount at %s", what, vm.MountPath)
			}
			c.VolumeMounts = append(c.VolumeMounts, vm)
		}
		for _, e := range pc.Env {
			if slices.ContainsFunc(c.Env, func(o corev1.EnvVar) bool { return o.Name == e.Name }) {
				t.Fatalf("%s: the patch replaces env %s", what, e.Name)
			}
			c.Env = append(c.Env, e)
		}
	}
}

// natsTLSWorkloads are the workloads with the nats-tls component's
// patches applied, by name as workloads names them.
func natsTLSWorkloads(t *testing.T, m *manifests) map[string]workload {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(natsTLSComponent, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c component
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", natsTLSComponent, err)
	}
	if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
		t.Fatalf("%s/kustomization.yaml: %s %s, want a kustomize Component", natsTLSComponent, c.APIVersion, c.Kind)
	}
	out := map[string]workload{}
	for _, p := range c.Patches {
		file := filepath.Join(natsTLSComponent, p.Path)
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var name string
		var pod corev1.PodTemplateSpec
		switch tm.Kind {
		case "Deployment":
			var patch appsv1.Deployment
			if err := yaml.UnmarshalStrict(raw, &patch); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			name, pod = "Deployment "+patch.Name, *named(t, m.deployments, patch.Name).Spec.Template.DeepCopy()
			patchPod(t, file, &pod, patch.Spec.Template)
		case "CronJob":
			var patch batchv1.CronJob
			if err := yaml.UnmarshalStrict(raw, &patch); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			name, pod = "CronJob "+patch.Name, *named(t, m.cronJobs, patch.Name).Spec.JobTemplate.Spec.Template.DeepCopy()
			patchPod(t, file, &pod, patch.Spec.JobTemplate.Spec.Template)
		default:
			t.Fatalf("%s: patches a %s", file, tm.Kind)
		}
		out[name] = workloadOf(t, name, pod)
	}
	return out
}

// TestNATSCredsAndTLS: the nats-tls component patches every workload (all
// of them connect to NATS) with --creds, --tls-ca, --tls-cert and
// --tls-key, flags the real binaries take, each a file of the Secret
// tablejournal-nats-tls mounted read-only where the flag points, a key
// the example Secret has.
func TestNATSCredsAndTLS(t *testing.T) {
	m := load(t)
	patched := natsTLSWorkloads(t, m)
	secret := named(t, m.secrets, natsTLSSecretName)
	for _, plain := range workloads(t, m) {
		w, ok := patched[plain.name]
		if !ok {
			t.Errorf("%s: the nats-tls component does not patch it, yet it connects to NATS", plain.name)
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			flags := flagValues(t, w, helpOf(t, w.command, w.args...))
			for _, f := range []string{"creds", "tls-ca", "tls-cert", "tls-key"} {
				file, ok := flags[f]
				if !ok {
					t.Errorf("no --%s", f)
					continue
				}
				key := secretFileKey(t, w, file, natsTLSSecretName)
				if _, ok := secret.StringData[key]; !ok {
					t.Errorf("--%s=%s is key %s, which nats-tls-secret.example.yaml lacks", f, file, key)
				}
			}
		})
	}
}

// secretFileKey is the key of Secret secretName that file is, mounted
// read-only from a volume of that Secret; anything else fails the test.
func secretFileKey(t *testing.T, w workload, file, secretName string) string {
	t.Helper()
	dir, base := path.Dir(file), path.Base(file)
	for _, vm := range w.container.VolumeMounts {
		if vm.MountPath != dir {
			continue
		}
		if !vm.ReadOnly {
			t.Errorf("the mount at %s is not readOnly", dir)
		}
		for _, v := range w.pod.Spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.Secret == nil || v.Secret.SecretName != secretName {
				t.Fatalf("%s: volume %s is not the Secret %s", file, v.Name, secretName)
			}
			for _, it := range v.Secret.Items {
				if it.Path == base {
					return it.Key
				}
			}
			if len(v.Secret.Items) > 0 {
				t.Fatalf("%s: the Secret volume %s does not project %s", file, v.Name, base)
			}
			return base
		}
		t.Fatalf("%s: the mount at %s names no volume %s", file, dir, vm.Name)
	}
	t.Fatalf("%s: nothing is mounted at %s", file, strings.TrimSuffix(dir, "/"))
	return ""
}
