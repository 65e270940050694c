// Package ociimage builds the container image of the three commands
// (projector, writer, replay) without a container engine: Compile builds
// them as static Linux binaries, Build puts them with the CA certificates
// into a one-layer image FROM scratch that runs as a non-root user with
// /projector as its entrypoint, and WriteLayout and WriteArchive write it as
// an OCI image layout and as a docker-archive tarball. `make image` runs it
// through scripts/image; deploy/ holds the Kubernetes manifests that run it.
//
// The manifests, layers, config and layout are go-containerregistry's: the
// digests, media types and index format are the OCI specification's
// business, not this project's. Only the layer's file list is written here.
package ociimage
