// Package deploy holds the Kubernetes manifests of tablejournal (the
// *.yaml files beside this one: the projector's Deployment, its
// PodDisruptionBudget, ServiceAccount, ConfigMap, metrics Service and
// ServiceMonitor, replay verify as a CronJob, the console's Deployment and
// Service, the examples of the NATS, NATS TLS and console sign-in Secrets,
// and the nats-tls component mounting the NATS credentials and TLS files)
// and the test that checks them against the commands they run: decoded
// with the Kubernetes API types by kind and name, their flags and
// environment variables parsed by the real binaries, their probes answered
// by a running projector, the console signed in to with the example
// Secret. The image they run is built by deploy/ociimage (`make image`).
package deploy
