// Package deploy holds the Kubernetes manifests of tablejournal (the
// *.yaml files beside this one: the projector's Deployment, its
// PodDisruptionBudget, ServiceAccount, ConfigMap, metrics Service and
// ServiceMonitor, the NATS Secret's example, and replay as a Job) and the
// test that checks them against the commands they run: decoded with the
// Kubernetes API types, their flags and environment variables parsed by
// the real binaries, their probes answered by a running projector. The
// image they run is built by deploy/ociimage (`make image`).
package deploy
