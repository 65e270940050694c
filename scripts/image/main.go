// Command image builds the container image of the three commands without
// a container engine (deploy/ociimage): static binaries, one layer FROM
// scratch, written as an OCI image layout in OUT/oci (tagged VERSION) and
// as a docker-archive tarball OUT/tablejournal.tar (tagged
// tablejournal:VERSION and tablejournal:latest).
// `make image` runs it.
//
// Usage: go run ./scripts/image -out DIR -version VERSION [-revision SHA] [-created RFC3339] [-source URL] [-arch GOARCH]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tablejournal/tablejournal/deploy/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "bin/image", "output folder: the binaries, oci/ (the OCI layout) and "+ociimage.Repository+".tar")
	c := ociimage.Config{}
	fs.StringVar(&c.Version, "version", "", "the image's version label and tag, e.g. from git describe (required)")
	fs.StringVar(&c.Revision, "revision", "", "the commit built, for the revision label")
	fs.StringVar(&c.Source, "source", "https://github.com/tablejournal/tablejournal", "the source repository, for the source label")
	fs.StringVar(&c.Arch, "arch", runtime.GOARCH, "GOARCH of the binaries")
	fs.StringVar(&c.CACerts, "ca-certs", ociimage.SystemCACerts, "CA bundle copied into the image")
	created := fs.String("created", "", "creation time, RFC 3339, e.g. the commit's (default the Unix epoch, for a reproducible image)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Version == "" {
		return errors.New("-version is required, e.g. -version $(git describe --tags --always --dirty)")
	}
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		c.Created = t
	}
	modDir, err := os.Getwd()
	if err != nil {
		return err
	}
	c.BinDir = filepath.Join(*out, "linux-"+c.Arch)
	if err := ociimage.Compile(ctx, modDir, c.BinDir, c.Arch, c.Version); err != nil {
		return err
	}
	img, err := ociimage.Build(c)
	if err != nil {
		return err
	}
	tags := []string{c.Version, "latest"}
	layoutDir, archive := filepath.Join(*out, "oci"), filepath.Join(*out, ociimage.Repository+".tar")
	if err := ociimage.WriteLayout(layoutDir, img, c.Version); err != nil {
		return err
	}
	if err := ociimage.WriteArchive(archive, img, tags...); err != nil {
		return err
	}
	return report(stdout, img, layoutDir, archive, tags)
}

func report(w io.Writer, img v1.Image, layoutDir, archive string, tags []string) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	compressed, uncompressed, err := ociimage.Sizes(img)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "image %s %s\n", ociimage.Repository, digest)
	fmt.Fprintf(w, "  OCI layout:     %s, tag %s (skopeo copy oci:%s docker://REGISTRY/%s:%s; crane push %s REGISTRY/%s:%s)\n",
		layoutDir, tags[0], layoutDir, ociimage.Repository, tags[0], layoutDir, ociimage.Repository, tags[0])
	fmt.Fprintf(w, "  docker-archive: %s, tags %v (docker load -i, podman load -i)\n", archive, tags)
	fmt.Fprintf(w, "  size:           %.1f MB compressed, %.1f MB uncompressed\n", float64(compressed)/1e6, float64(uncompressed)/1e6)
	return nil
}
