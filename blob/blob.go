// Package blob is MIO's object store behind one small interface, with two
// implementations: file://DIR (default, used by mio dev) and
// gs://BUCKET/PREFIX (Google Cloud Storage). Writes are streamed, atomic
// and idempotent.
package blob
