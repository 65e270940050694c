package store

// Key order.
//
// Azure Tables keeps entities sorted by PartitionKey, then RowKey, and
// compares keys ordinally. The service is .NET and its strings are UTF-16, so
// "ordinal" means UTF-16 code unit order; Azure Blob listings are observably
// in UTF-16 order, and Azurite sorts with JavaScript's string comparison,
// which is UTF-16 code unit order too. It agrees with UTF-8 byte order (and
// code point order) everywhere but in one place: a character above U+FFFF
// (stored as a surrogate pair, 0xD800..0xDFFF) sorts before any character in
// U+E000..U+FFFF, where UTF-8 puts it after. Both backends use UTF-16 order;
// the conformance suite checks it.

// CompareKeys compares two keys in the order Azure Tables sorts them: by
// UTF-16 code units. It returns -1, 0 or +1. The keys must be valid UTF-8,
// as ValidateKey requires.
func CompareKeys(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		switch {
		case len(a) < len(b):
			return -1
		case len(a) > len(b):
			return 1
		}
		return 0
	}
	// Equal prefixes of valid UTF-8 end on the same character boundary, so
	// a[i] and b[i] are either both continuation bytes of one character
	// (compared as they are) or both lead bytes.
	if UTF16OrderByte(a[i]) < UTF16OrderByte(b[i]) {
		return -1
	}
	return 1
}

// UTF16OrderByte maps a byte of UTF-8 so that byte order of the mapped text
// is UTF-16 code unit order of the original: the lead bytes of 4-byte
// sequences (0xF0..0xF4, characters above U+FFFF) move below the lead bytes
// of U+E000..U+FFFF (0xEE, 0xEF). Every other byte, including all
// continuation bytes, is unchanged. The map is a bijection on bytes; its
// inverse is UTF16OrderByteInverse.
func UTF16OrderByte(c byte) byte {
	switch {
	case c == 0xEE || c == 0xEF:
		return c + 5 // 0xF3, 0xF4
	case c >= 0xF0 && c <= 0xF4:
		return c - 2 // 0xEE..0xF2
	}
	return c
}

// UTF16OrderByteInverse undoes UTF16OrderByte.
func UTF16OrderByteInverse(c byte) byte {
	switch {
	case c == 0xF3 || c == 0xF4:
		return c - 5
	case c >= 0xEE && c <= 0xF2:
		return c + 2
	}
	return c
}
