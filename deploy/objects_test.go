package deploy_test

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tablejournal/tablejournal/deploy/ociimage"
)

// TestImage: every container runs the image `make image` builds, under
// the name kustomization.yaml rewrites, and only there is a registry named.
func TestImage(t *testing.T) {
	m := load(t)
	for _, w := range workloads(t, m) {
		if w.container.Image != ociimage.Repository {
			t.Errorf("%s image %q, want %q, the name make image gives and kustomization.yaml rewrites", w.name, w.container.Image, ociimage.Repository)
		}
	}
	k := m.kustomization.Images[0]
	if path.Base(k.NewName) != ociimage.Repository {
		t.Errorf("kustomization.yaml newName %q: its repository is not %s", k.NewName, ociimage.Repository)
	}
}

// TestSecurityContext: each pod runs as the image's non-root user, with a
// read-only root filesystem, no capabilities and no privilege escalation,
// and asks for CPU and memory within a memory limit.
func TestSecurityContext(t *testing.T) {
	m := load(t)
	for _, w := range workloads(t, m) {
		t.Run(w.name, func(t *testing.T) {
			ps, cs := w.pod.Spec.SecurityContext, w.container.SecurityContext
			if ps == nil || cs == nil {
				t.Fatal("no pod or container securityContext")
			}
			checks := []struct {
				what string
				ok   bool
			}{
				{"runAsNonRoot: true", ps.RunAsNonRoot != nil && *ps.RunAsNonRoot},
				{"runAsUser: the image's user", ps.RunAsUser != nil && *ps.RunAsUser == ociimage.UID},
				{"seccompProfile RuntimeDefault", ps.SeccompProfile != nil && ps.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
				{"readOnlyRootFilesystem: true", cs.ReadOnlyRootFilesystem != nil && *cs.ReadOnlyRootFilesystem},
				{"allowPrivilegeEscalation: false", cs.AllowPrivilegeEscalation != nil && !*cs.AllowPrivilegeEscalation},
				{"capabilities: drop ALL", cs.Capabilities != nil && len(cs.Capabilities.Drop) == 1 && cs.Capabilities.Drop[0] == "ALL" && len(cs.Capabilities.Add) == 0},
				{"privileged unset", cs.Privileged == nil || !*cs.Privileged},
				{"a CPU request", !w.container.Resources.Requests.Cpu().IsZero()},
				{"a memory request", !w.container.Resources.Requests.Memory().IsZero()},
				{"a memory limit above the request", w.container.Resources.Limits.Memory().Cmp(*w.container.Resources.Requests.Memory()) > 0},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("want %s", c.what)
				}
			}
		})
	}
}

var clientID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestWorkloadIdentity: each pod uses workload identity with the
// ServiceAccount that names the Entra ID identity, and the table store is
// a bare https endpoint, with no key or SAS, so the commands sign in.
func TestWorkloadIdentity(t *testing.T) {
	m := load(t)
	sa := named(t, m.serviceAccounts, identityName)
	if id := sa.Annotations["azure.workload.identity/client-id"]; !clientID.MatchString(id) {
		t.Errorf("ServiceAccount %s: azure.workload.identity/client-id %q, want a client ID", sa.Name, id)
	}
	for _, w := range workloads(t, m) {
		if v := w.pod.Labels["azure.workload.identity/use"]; v != "true" {
			t.Errorf("%s: pod label azure.workload.identity/use %q, want \"true\"", w.name, v)
		}
		auth := ""
		for _, c := range w.pod.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "TABLEJOURNAL_AUTH" {
					auth = e.Value
				}
			}
		}
		if auth != "login" {
			t.Errorf("%s: TABLEJOURNAL_AUTH %q, want login (sign in with the workload identity)", w.name, auth)
		}
		if w.pod.Spec.ServiceAccountName != sa.Name {
			t.Errorf("%s: serviceAccountName %q, want %q", w.name, w.pod.Spec.ServiceAccountName, sa.Name)
		}
	}
	tables := named(t, m.configMaps, configMapName).Data["tables"]
	u, err := url.Parse(tables)
	if err != nil || u.Scheme != "https" || u.RawQuery != "" || strings.Contains(strings.ToLower(tables), "accountkey") || u.User != nil {
		t.Errorf("ConfigMap tables %q: want a bare https endpoint, no key and no SAS (%v)", tables, err)
	}
}

// selects fails unless sel selects set.
func selects(t *testing.T, what string, sel *metav1.LabelSelector, set map[string]string) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if s.Empty() || !s.Matches(labels.Set(set)) {
		t.Errorf("%s: selector %q does not select %v", what, s, set)
	}
}

// TestAvailability: several projectors, of which a voluntary disruption
// takes at most all but one; the PodDisruptionBudget, the metrics Service
// and the ServiceMonitor select them.
func TestAvailability(t *testing.T) {
	m := load(t)
	d := named(t, m.deployments, projectorName)
	pdb := named(t, m.pdbs, projectorName)
	svc := named(t, m.services, metricsService)
	sm := named(t, m.serviceMonitors, projectorName)
	pods := d.Spec.Template.Labels
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Spec.Replicas)
	}
	selects(t, "Deployment", d.Spec.Selector, pods)
	selects(t, "PodDisruptionBudget", pdb.Spec.Selector, pods)
	selects(t, "Service", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pods)
	selects(t, "ServiceMonitor", &sm.Spec.Selector, svc.Labels)
	if u := pdb.Spec.MaxUnavailable; u == nil || u.IntValue() < 1 || u.IntValue() >= int(*d.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1 to replicas-1", u)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, sp := range svc.Spec.Ports {
		port := containerPort(t, c, sp.TargetPort)
		if sp.Name != sm.Spec.Endpoints[0].Port {
			t.Errorf("Service port %s (%d), ServiceMonitor's %s", sp.Name, port, sm.Spec.Endpoints[0].Port)
		}
	}
	if q := c.Resources.Requests.Memory(); q.Cmp(resource.MustParse("128Mi")) < 0 {
		t.Errorf("memory request %s: the projector's row cache alone takes more", q)
	}
}
