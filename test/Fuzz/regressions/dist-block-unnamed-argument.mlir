// dist-fuzz (CI, 2026-12-04): an assertion in MutableArrayRef::operator[]
// from verifyValueSharding (DistDialect.cpp). A body whose signature names
// no arguments has an entry block with none; the argument attribute
// verifiers run before the function's own check of the entry block, and the
// diagnostic's location asked for the missing block argument.
func.func @f(tensor<2x4xf32> {dist.block = #dist.block<offsets = [2, 0], shape = [4, 4]>}) {
  return
}
