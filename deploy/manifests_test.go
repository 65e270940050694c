package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tablejournal/tablejournal/deploy/deploytest"
	"github.com/tablejournal/tablejournal/deploy/ociimage"
)

// binDir holds the projector and replay binaries TestMain builds, as the
// image has them.
var binDir string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mod, err := deploytest.ModuleDir(ctx)
	if err == nil {
		binDir = filepath.Join(tmp, "bin")
		err = ociimage.Compile(ctx, mod, binDir, runtime.GOARCH, "", "projector", "replay")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// kustomization is the part of kustomize's Kustomization the manifests
// use (decoded strictly: a field not named here fails the test).
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// the manifests use.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// manifests are the objects of every YAML file of deploy/, decoded
// strictly into their API types, listed by kind; find one by name with
// named.
type manifests struct {
	files           map[string]int // objects per file
	kustomization   *kustomization
	deployments     []*appsv1.Deployment
	pdbs            []*policyv1.PodDisruptionBudget
	serviceAccounts []*corev1.ServiceAccount
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	services        []*corev1.Service
	serviceMonitors []*serviceMonitor
	cronJobs        []*batchv1.CronJob
}

// The objects the tests look up by name.
const (
	projectorName  = "tablejournal-projector"
	consoleName    = "tablejournal-console"
	natsSecretName = "tablejournal-nats"
	authSecretName = "tablejournal-console-auth"
	metricsService = "tablejournal-projector-metrics"
	identityName   = "tablejournal"
	configMapName  = "tablejournal"
)

// decodeInto returns a decoder appending each object to list.
func decodeInto[T any](list *[]*T) func([]byte) error {
	return func(doc []byte) error {
		v := new(T)
		if err := yaml.UnmarshalStrict(doc, v); err != nil {
			return err
		}
		*list = append(*list, v)
		return nil
	}
}

// decoder is how an object of apiVersion and kind is decoded.
func (m *manifests) decoder(apiVersion, kind string) (func([]byte) error, bool) {
	decoders := map[string]func([]byte) error{
		"kustomize.config.k8s.io/v1beta1 Kustomization": func(doc []byte) error {
			if m.kustomization != nil {
				return fmt.Errorf("a second Kustomization")
			}
			return yaml.UnmarshalStrict(doc, &m.kustomization)
		},
		"apps/v1 Deployment":                      decodeInto(&m.deployments),
		"policy/v1 PodDisruptionBudget":           decodeInto(&m.pdbs),
		"v1 ServiceAccount":                       decodeInto(&m.serviceAccounts),
		"v1 ConfigMap":                            decodeInto(&m.configMaps),
		"v1 Secret":                               decodeInto(&m.secrets),
		"v1 Service":                              decodeInto(&m.services),
		"monitoring.coreos.com/v1 ServiceMonitor": decodeInto(&m.serviceMonitors),
		"batch/v1 CronJob":                        decodeInto(&m.cronJobs),
	}
	d, ok := decoders[apiVersion+" "+kind]
	return d, ok
}

// named is the object of list called name; none fails the test.
func named[T interface{ GetName() string }](t *testing.T, list []T, name string) T {
	t.Helper()
	for _, o := range list {
		if o.GetName() == name {
			return o
		}
	}
	var names []string
	for _, o := range list {
		names = append(names, o.GetName())
	}
	var zero T
	t.Fatalf("no %T named %s in deploy/*.yaml (there are %v)", zero, name, names)
	return zero
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// load decodes every YAML file of deploy/. Two objects of one kind with
// one name fail the test.
func load(t *testing.T) *manifests {
	t.Helper()
	paths, err := filepath.Glob("*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	m := &manifests{files: map[string]int{}}
	seen := map[string]string{} // kind/name: file
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docSeparator.Split(string(raw), -1) {
			var tm struct {
				metav1.TypeMeta `json:",inline"`
				Metadata        struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if tm.Kind == "" {
				continue // only comments
			}
			decode, ok := m.decoder(tm.APIVersion, tm.Kind)
			if !ok {
				t.Fatalf("%s: %s %s: a kind this test does not check", p, tm.APIVersion, tm.Kind)
			}
			key := tm.Kind + "/" + tm.Metadata.Name
			if other, dup := seen[key]; dup {
				t.Fatalf("%s: %s is also in %s", p, key, other)
			}
			seen[key] = p
			if err := decode([]byte(doc)); err != nil {
				t.Fatalf("%s: %s: %v", p, key, err)
			}
			m.files[p]++
		}
	}
	if m.kustomization == nil {
		t.Fatal("no Kustomization in deploy/*.yaml")
	}
	return m
}

// TestKustomization: every resource it lists is a manifest of deploy/
// holding objects; the one image it names is the image `make image` builds.
func TestKustomization(t *testing.T) {
	m := load(t)
	for _, r := range m.kustomization.Resources {
		if m.files[r] == 0 {
			t.Errorf("kustomization.yaml lists %s, which holds no object of deploy/", r)
		}
	}
	for _, want := range []string{"projector.yaml", "pdb.yaml", "serviceaccount.yaml", "configmap.yaml", "service.yaml", "replay-verify-cronjob.yaml", "console.yaml"} {
		if !slices.Contains(m.kustomization.Resources, want) {
			t.Errorf("kustomization.yaml does not apply %s", want)
		}
	}
	for _, example := range []string{"nats-secret.example.yaml", "console-auth-secret.example.yaml"} {
		if slices.Contains(m.kustomization.Resources, example) {
			t.Errorf("kustomization.yaml applies %s: a secret's example is not to be applied", example)
		}
	}
	if len(m.kustomization.Images) != 1 || m.kustomization.Images[0].Name != ociimage.Repository {
		t.Errorf("kustomization.yaml images %+v, want one, named %q as make image names it", m.kustomization.Images, ociimage.Repository)
	}
}
