package stores

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/store/azure"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

const (
	key = "c2VjcmV0LWtleS10aGF0LW11c3QtbmV2ZXItbGVhaw=="
	sig = "c2VjcmV0LXNpZw%3D%3D"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "embedded (tables.db in the data folder)"},
		{"sqlite:/tmp/x.db", "sqlite:/tmp/x.db"},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=***;EndpointSuffix=core.windows.net"},
		{"TableEndpoint=https://acct.table.core.windows.net/;sharedaccesssignature=sv=2019&sig=" + sig,
			"TableEndpoint=https://acct.table.core.windows.net/;sharedaccesssignature=***"},
		{"AccountName=acct;" + key, "AccountName=acct;***"},
		{"https://acct.table.core.windows.net/?sv=2019&sig=" + sig, "https://acct.table.core.windows.net/?***"},
		{"https://acct.table.core.windows.net", "https://acct.table.core.windows.net"},
	} {
		got := Describe(tc.spec)
		if got != tc.want {
			t.Errorf("Describe(%q) = %q, want %q", tc.spec, got, tc.want)
		}
		if strings.Contains(got, key) || strings.Contains(got, sig) {
			t.Errorf("Describe(%q) leaks a secret: %q", tc.spec, got)
		}
	}
}

func TestParse(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		spec, dataDir string
		kind          Kind
		path          string
		ok            bool
	}{
		{"", dir, Embedded, filepath.Join(dir, "tables.db"), true},
		{"", "", 0, "", false},
		{"sqlite:/x/y.db", "", Embedded, "/x/y.db", true},
		{"sqlite:", dir, 0, "", false},
		{"UseDevelopmentStorage=true", "", Azure, "", true},
		{"AccountName=a;AccountKey=" + key, "", Azure, "", true},
		{"https://acct.table.core.windows.net/?sig=" + sig, "", Azure, "", true},
		{"https://acct.table.cosmos.azure.com:443/", "", Cosmos, "", true},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";TableEndpoint=https://acct.table.cosmos.azure.com:443/;", "", Cosmos, "", true},
		{"postgres", dir, 0, "", false},
	} {
		kind, path, err := Parse(tc.spec, tc.dataDir)
		if (err == nil) != tc.ok || kind != tc.kind || path != tc.path {
			t.Errorf("Parse(%q, %q) = %v, %q, %v", tc.spec, tc.dataDir, kind, path, err)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("Parse error leaks the key: %v", err)
		}
	}
}

// TestParseUnknownSays: a value of no known form is quoted when it is
// short, so a typo can be seen, and never when it may be key material;
// before, every such value read "***".
func TestParseUnknownSays(t *testing.T) {
	long := strings.TrimRight(key, "=") // a key without its padding has no '='
	for _, tc := range []struct {
		spec     string
		want     []string
		withheld string
	}{
		{"garbage", []string{`"garbage" is neither sqlite:PATH`}, ""},
		{" postgres ", []string{`"postgres" is neither`}, ""},
		{"/var/lib/tj/tables.db", []string{`"/var/lib/tj/tables.db"`, "write sqlite:/var/lib/tj/tables.db"}, ""},
		{long, []string{"a value of 42 characters (not shown: it may hold a secret)"}, long},
		{"pass word", []string{"a value of 9 characters (not shown"}, "pass word"},
	} {
		_, _, err := Parse(tc.spec, "")
		if err == nil {
			t.Fatalf("Parse(%q): no error", tc.spec)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q): %v, want it to say %q", tc.spec, err, w)
			}
		}
		if tc.withheld != "" && strings.Contains(err.Error(), tc.withheld) {
			t.Errorf("Parse(%q) shows the value: %v", tc.spec, err)
		}
	}
}

func TestOpenAzure(t *testing.T) {
	s, closer, err := Open(context.Background(), "UseDevelopmentStorage=true", "")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if _, ok := s.(*azure.Store); !ok {
		t.Fatalf("Open returned %T", s)
	}
	_, _, err = Open(context.Background(), "AccountName=a;AccountKey=not-base64-"+key, "")
	if err == nil {
		t.Fatal("Open with a malformed key succeeded")
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("Open error leaks the key: %v", err)
	}
}

func TestOpenEmbedded(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	for _, spec := range []string{"", "sqlite:" + filepath.Join(t.TempDir(), "sub", "x.db")} {
		s, closer, err := Open(ctx, spec, dir)
		if err != nil {
			t.Fatalf("Open(%q): %v", spec, err)
		}
		if _, ok := s.(*sqlite.Store); !ok {
			t.Fatalf("Open(%q) returned %T", spec, s)
		}
		if err := s.CreateTable(ctx, "smoke"); err != nil {
			t.Fatalf("Open(%q): CreateTable: %v", spec, err)
		}
		if err := closer.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, EmbeddedFile)); err != nil {
		t.Errorf("the empty spec did not use <dataDir>/%s: %v", EmbeddedFile, err)
	}
}

// TestIsCosmos: a Cosmos DB for Table endpoint is told from the URL or the
// connection string's TableEndpoint or EndpointSuffix; Azure Storage,
// Azurite and look-alikes elsewhere in the spec are not.
func TestIsCosmos(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want bool
	}{
		{"https://acct.table.cosmos.azure.com:443/", true},
		{"https://ACCT.Table.Cosmos.Azure.Com/?sig=" + sig, true},
		{"https://acct.table.cosmosdb.azure.com", true},
		{"https://acct.table.cosmos.azure.cn/", true},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";TableEndpoint=https://acct.table.cosmos.azure.com:443/;", true},
		{"AccountName=acct;AccountKey=" + key + ";EndpointSuffix=cosmos.azure.com", true},
		{"https://acct.table.core.windows.net", false},
		{"DefaultEndpointsProtocol=https;AccountName=cosmos;AccountKey=" + key + ";EndpointSuffix=core.windows.net", false},
		{"TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;AccountName=devstoreaccount1;AccountKey=" + key, false},
		{"UseDevelopmentStorage=true", false},
		{"https://acct.table.core.windows.net/?x=.table.cosmos.azure.com", false},
	} {
		if got := IsCosmos(tc.spec); got != tc.want {
			t.Errorf("IsCosmos(%q) = %v, want %v", Describe(tc.spec), got, tc.want)
		}
	}
}

// TestOpenCosmos: Open gives a Cosmos DB for Table endpoint a store with
// Cosmos's limits, and Azure's none beyond its own.
func TestOpenCosmos(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		cosmos bool
	}{
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";TableEndpoint=https://acct.table.cosmos.azure.com:443/;", true},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net", false},
	} {
		s, c, err := Open(context.Background(), tc.spec, "")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if got := s.Limits().Service != ""; got != tc.cosmos {
			t.Errorf("Open(%s): limits %+v, want Cosmos's %v", Describe(tc.spec), s.Limits(), tc.cosmos)
		}
	}
}
