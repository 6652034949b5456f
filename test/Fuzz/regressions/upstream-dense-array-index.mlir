// Upstream MLIR 22 crash (parseDenseArrayAttr on an index element type):
// dist-fuzz rejects this input before parsing; it must not crash.
func.func @f() attributes {a = array<index: 1, 2>} {
  return
}
