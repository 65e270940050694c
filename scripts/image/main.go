// Command image builds the container image of the three commands without
// a container engine (deploy/ociimage): static binaries, one layer FROM
// scratch, for each architecture of -arch, written as one OCI image index
// in the layout OUT/oci (tagged VERSION) and, for the first architecture,
// as a docker-archive tarball OUT/tablejournal.tar (tagged
// tablejournal:VERSION and tablejournal:latest; docker load takes one
// architecture). `make image` runs it.
//
// Usage: go run ./scripts/image -out DIR -version VERSION [-revision SHA] [-created RFC3339] [-source URL] [-arch GOARCH,...]
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
	"strings"
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
	arches := fs.String("arch", "amd64,arm64", "GOARCH of the binaries, comma-separated: one image each, in one index; the first is the docker-archive's")
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
	var imgs []v1.Image
	for _, arch := range strings.Split(*arches, ",") {
		arch = strings.TrimSpace(arch)
		if arch == "" {
			return fmt.Errorf("-arch %q: an empty architecture", *arches)
		}
		c := c
		c.Arch, c.BinDir = arch, filepath.Join(*out, "linux-"+arch)
		if err := ociimage.Compile(ctx, modDir, c.BinDir, c.Arch, c.Version); err != nil {
			return err
		}
		img, err := ociimage.Build(c)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	idx, err := ociimage.Index(imgs...)
	if err != nil {
		return err
	}
	tags := []string{c.Version, "latest"}
	layoutDir, archive := filepath.Join(*out, "oci"), filepath.Join(*out, ociimage.Repository+".tar")
	if err := ociimage.WriteLayout(layoutDir, idx, c.Version); err != nil {
		return err
	}
	if err := ociimage.WriteArchive(archive, imgs[0], tags...); err != nil {
		return err
	}
	return report(stdout, idx, imgs, layoutDir, archive, tags)
}

func report(w io.Writer, idx v1.ImageIndex, imgs []v1.Image, layoutDir, archive string, tags []string) error {
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "image index %s %s\n", ociimage.Repository, digest)
	fmt.Fprintf(w, "  OCI layout:     %s, tag %s (skopeo copy --all oci:%s docker://REGISTRY/%s:%s; crane push %s REGISTRY/%s:%s)\n",
		layoutDir, tags[0], layoutDir, ociimage.Repository, tags[0], layoutDir, ociimage.Repository, tags[0])
	for i, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		compressed, uncompressed, err := ociimage.Sizes(img)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  linux/%-9s %.1f MB compressed, %.1f MB uncompressed\n", cf.Architecture+":", float64(compressed)/1e6, float64(uncompressed)/1e6)
		if i == 0 {
			fmt.Fprintf(w, "  docker-archive: %s, linux/%s, tags %v (docker load -i, podman load -i)\n", archive, cf.Architecture, tags)
		}
	}
	return nil
}
