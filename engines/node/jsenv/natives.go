package jsenv

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"hash"
	"strconv"
	"strings"
	"time"

	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
	"github.com/code-runner-go/code-runner/internal/buildinfo"
	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// The environment's own native operations (contract §25): its units, the
// module wrapper's compile, the transform, the clock, the facts process
// shows, and Go's hashes and randomness. The host answers the rest (the
// console, timers, files, bus calls); Op says which are the environment's.

// clock is an isolate's performance.now() zero (monotonic) and
// performance.timeOrigin.
type clock struct {
	origin, wall time.Time
}

// Streamed digests: a piece's size, and how many may be open at once.
const (
	hashPiece     = 1 << 20
	maxOpenHashes = 256
)

// Op answers the environment's native operation op (the call's first
// argument) and reports whether it was one.
func (e *Env) Op(c *v8.Call, op string) bool {
	switch op {
	case "unit":
		e.loadUnit(c, c.Str(1))
	case "hasUnit":
		_, ok, _ := Source(c.Str(1))
		c.ReturnString(boolDigit(ok))
	case "compile":
		e.compileModule(c, c.Str(1), c.Str(2))
	case "transform":
		out, err := e.shared.transform(c.Str(1), c.Str(2), c.Str(3))
		if err != nil {
			c.ReturnString("\x00" + err.Error())
			return true
		}
		c.ReturnString(out)
	case "now", "timeOrigin", "hrtime", "crypto.random":
		if e.making {
			// Nothing of the clock or of randomness may be in a snapshot.
			c.Throw(v8.PlainError, "code-runner: "+op+" is not available while the startup snapshot is made")
			return true
		}
		e.timeOrRandom(c, op)
	case "esmNames":
		c.ReturnString(ESMNames(c.Str(1)))
	case "info":
		b, _ := jsonx.Marshal(map[string]string{"v8": v8.Version(), "version": buildinfo.Version})
		c.ReturnString(string(b))
	case "crypto.hash":
		mk, ok := newHash(c.Str(1))
		if !ok {
			c.ReturnString(`{"e":"Digest method not supported","c":"ERR_CRYPTO_INVALID_DIGEST"}`)
			return true
		}
		hh := hasher(mk, c, 3)
		hh.Write(c.BytesView(2))
		c.ReturnBytes(hh.Sum(nil))
	case "crypto.hashOpen":
		// A digest fed in pieces (crypto.hashWrite, at most hashPiece bytes
		// each).
		mk, ok := newHash(c.Str(1))
		if !ok {
			c.ReturnString(`{"e":"Digest method not supported","c":"ERR_CRYPTO_INVALID_DIGEST"}`)
			return true
		}
		if len(e.hashes) >= maxOpenHashes {
			c.ReturnString(`{"e":"too many hashes in progress (limit 256): call digest() on some first"}`)
			return true
		}
		e.hashSeq++
		e.hashes[e.hashSeq] = hasher(mk, c, 2)
		c.ReturnString(strconv.FormatInt(e.hashSeq, 10))
	case "crypto.hashWrite":
		id, _ := strconv.ParseInt(c.Str(1), 10, 64)
		if hh, ok := e.hashes[id]; ok {
			if data := c.BytesView(2); len(data) <= hashPiece {
				hh.Write(data)
			}
		}
	case "crypto.hashSum":
		id, _ := strconv.ParseInt(c.Str(1), 10, 64)
		hh, ok := e.hashes[id]
		if !ok {
			c.ReturnString(`{"e":"Digest already called","c":"ERR_CRYPTO_HASH_FINALIZED"}`)
			return true
		}
		delete(e.hashes, id)
		c.ReturnBytes(hh.Sum(nil))
	case "crypto.pbkdf2":
		pbkdf2Op(c)
	default:
		return false
	}
	return true
}

func (e *Env) timeOrRandom(c *v8.Call, op string) {
	switch op {
	case "now":
		c.ReturnString(strconv.FormatFloat(float64(time.Since(e.clock.origin).Nanoseconds())/1e6, 'f', 6, 64))
	case "timeOrigin":
		c.ReturnString(strconv.FormatFloat(float64(e.clock.wall.UnixNano())/1e6, 'f', 3, 64))
	case "hrtime":
		c.ReturnString(strconv.FormatInt(time.Since(e.clock.origin).Nanoseconds()+int64(time.Hour), 10))
	case "crypto.random":
		n, err := strconv.Atoi(c.Str(1))
		if err != nil || n < 0 || n > 65536 {
			c.ReturnString(`{"e":"crypto: at most 65536 random bytes per call"}`)
			return
		}
		b := make([]byte, n)
		_, _ = rand.Read(b)
		c.ReturnBytes(b)
	}
}

// hasher makes the digest: an HMAC when the call's argument keyAt is a
// key (bytes), else the plain hash.
func hasher(mk func() hash.Hash, c *v8.Call, keyAt int) hash.Hash {
	if c.Kind(keyAt) == v8.KindBytes {
		return hmac.New(mk, c.Bytes(keyAt))
	}
	return mk()
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func newHash(alg string) (func() hash.Hash, bool) {
	switch alg {
	case "md5":
		return md5.New, true
	case "sha1":
		return sha1.New, true
	case "sha224":
		return sha256.New224, true
	case "sha256":
		return sha256.New, true
	case "sha384":
		return sha512.New384, true
	case "sha512":
		return sha512.New, true
	case "sha512-256":
		return sha512.New512_256, true
	}
	return nil, false
}

// pbkdf2Op derives a key: (head JSON {digest, iterations, keylen},
// password bytes, salt bytes).
func pbkdf2Op(c *v8.Call) {
	var req struct {
		Digest     string `json:"digest"`
		Iterations int    `json:"iterations"`
		Keylen     int    `json:"keylen"`
	}
	if err := json.Unmarshal([]byte(c.StrView(1)), &req); err != nil {
		c.ReturnString(`{"e":"malformed pbkdf2 request"}`)
		return
	}
	mk, ok := newHash(req.Digest)
	if !ok {
		c.ReturnString(`{"e":"Invalid digest: ` + strings.ReplaceAll(req.Digest, `"`, "") + `","c":"ERR_CRYPTO_INVALID_DIGEST"}`)
		return
	}
	if req.Iterations < 1 || req.Iterations > 10_000_000 || req.Keylen < 0 || req.Keylen > 1<<20 {
		c.ReturnString(`{"e":"pbkdf2: iterations must be 1..10000000 and keylen 0..1048576","c":"ERR_OUT_OF_RANGE"}`)
		return
	}
	key, err := pbkdf2.Key(mk, string(c.BytesView(2)), c.Bytes(3), req.Iterations, req.Keylen)
	if err != nil {
		c.ReturnString(`{"e":"pbkdf2 failed"}`)
		return
	}
	c.ReturnBytes(key)
}
