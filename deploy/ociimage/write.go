package ociimage

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index is the images, one per architecture (each config's), as one OCI
// image index: what a registry serves a pull on linux/amd64 or
// linux/arm64 from under one tag.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	if len(imgs) == 0 {
		return nil, errors.New("ociimage: an index of no image")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("ociimage: %w", err)
		}
		if seen[cf.Architecture] {
			return nil, fmt.Errorf("ociimage: two images for %s/%s", cf.OS, cf.Architecture)
		}
		seen[cf.Architecture] = true
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
		}})
	}
	return idx, nil
}

// WriteLayout writes idx as an OCI image layout in dir, replacing what
// was there: one image index, tagged tag (the layout's
// org.opencontainers.image.ref.name), as `skopeo copy --all oci:DIR` and
// `crane push DIR` read it.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	if tag == "" {
		return errors.New("ociimage: a layout needs a tag")
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("ociimage: layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: tag})); err != nil {
		return fmt.Errorf("ociimage: layout %s: %w", dir, err)
	}
	return nil
}

// WriteArchive writes img as a docker-archive tarball at path (docker
// load, podman load), tagged Repository:TAG for each tag.
func WriteArchive(path string, img v1.Image, tags ...string) error {
	refs := make(map[name.Reference]v1.Image, len(tags))
	for _, tag := range tags {
		ref, err := name.NewTag(Repository+":"+tag, name.WithDefaultRegistry(""))
		if err != nil {
			return fmt.Errorf("ociimage: tag %q: %w", tag, err)
		}
		refs[ref] = img
	}
	if err := tarball.MultiRefWriteToFile(path, refs); err != nil {
		return fmt.Errorf("ociimage: %s: %w", path, err)
	}
	return nil
}

// Sizes are the image's size as pushed (the compressed layers, the config
// and the manifest) and as unpacked (the layers' uncompressed tars).
func Sizes(img v1.Image) (compressed, uncompressed int64, err error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, 0, fmt.Errorf("ociimage: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, 0, fmt.Errorf("ociimage: %w", err)
	}
	compressed = m.Config.Size + int64(len(raw))
	for _, l := range m.Layers {
		compressed += l.Size
	}
	layers, err := img.Layers()
	if err != nil {
		return 0, 0, fmt.Errorf("ociimage: %w", err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return 0, 0, fmt.Errorf("ociimage: %w", err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("ociimage: %w", err)
		}
		uncompressed += n
	}
	return compressed, uncompressed, nil
}
