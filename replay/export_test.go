package replay

// ReadVersion exposes readVersion to the external tests.
var ReadVersion = readVersion
