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

// manifests are the objects of every YAML file of deploy/, one of each
// kind, decoded strictly into their API types.
type manifests struct {
	files          map[string]int // objects per file
	kustomization  *kustomization
	deployment     *appsv1.Deployment
	pdb            *policyv1.PodDisruptionBudget
	serviceAccount *corev1.ServiceAccount
	configMap      *corev1.ConfigMap
	secret         *corev1.Secret
	service        *corev1.Service
	serviceMonitor *serviceMonitor
	cronJob        *batchv1.CronJob
}

// slot is where an object of apiVersion and kind decodes to.
func (m *manifests) slot(apiVersion, kind string) (any, bool) {
	slots := map[string]any{
		"kustomize.config.k8s.io/v1beta1 Kustomization": &m.kustomization,
		"apps/v1 Deployment":                            &m.deployment,
		"policy/v1 PodDisruptionBudget":                 &m.pdb,
		"v1 ServiceAccount":                             &m.serviceAccount,
		"v1 ConfigMap":                                  &m.configMap,
		"v1 Secret":                                     &m.secret,
		"v1 Service":                                    &m.service,
		"monitoring.coreos.com/v1 ServiceMonitor":       &m.serviceMonitor,
		"batch/v1 CronJob":                              &m.cronJob,
	}
	s, ok := slots[apiVersion+" "+kind]
	return s, ok
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// load decodes every YAML file of deploy/.
func load(t *testing.T) *manifests {
	t.Helper()
	paths, err := filepath.Glob("*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	m := &manifests{files: map[string]int{}}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docSeparator.Split(string(raw), -1) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if tm.Kind == "" {
				continue // only comments
			}
			dst, ok := m.slot(tm.APIVersion, tm.Kind)
			if !ok {
				t.Fatalf("%s: %s %s: a kind this test does not check", p, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), dst); err != nil {
				t.Fatalf("%s: %s: %v", p, tm.Kind, err)
			}
			m.files[p]++
		}
	}
	for what, ok := range map[string]bool{"Kustomization": m.kustomization != nil, "Deployment": m.deployment != nil,
		"PodDisruptionBudget": m.pdb != nil, "ServiceAccount": m.serviceAccount != nil, "ConfigMap": m.configMap != nil,
		"Secret": m.secret != nil, "Service": m.service != nil, "ServiceMonitor": m.serviceMonitor != nil, "CronJob": m.cronJob != nil} {
		if !ok {
			t.Fatalf("no %s in deploy/*.yaml", what)
		}
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
	for _, want := range []string{"projector.yaml", "pdb.yaml", "serviceaccount.yaml", "configmap.yaml", "service.yaml", "replay-verify-cronjob.yaml"} {
		if !slices.Contains(m.kustomization.Resources, want) {
			t.Errorf("kustomization.yaml does not apply %s", want)
		}
	}
	if len(m.kustomization.Images) != 1 || m.kustomization.Images[0].Name != ociimage.Repository {
		t.Errorf("kustomization.yaml images %+v, want one, named %q as make image names it", m.kustomization.Images, ociimage.Repository)
	}
}
