// Package archtest holds MIO's architecture test: the import directions of
// docs/architecture.md ("Dependencies run one way"), checked against the
// packages' real imports as `go list -deps` reports them. It has no code
// of its own. Internal to MIO; not a stable API.
package archtest
