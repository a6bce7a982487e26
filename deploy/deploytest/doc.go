// Package deploytest checks MIO's deployment files — the Dockerfile, the
// Helm chart in deploy/helm/mio and deploy/compose.yaml — by parsing and
// rendering them with the tools' own Go libraries. It is a separate module
// so that buildkit, Helm, k8s.io/api and compose-go stay out of the
// service's dependency graph; it imports no MIO package.
package deploytest
