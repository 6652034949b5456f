//===- ParseSource.cpp - parse user text without crashing -----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Support/ParseSource.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

static bool isBareIdChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// The position of the first character of `text` at or after `pos` that is
/// neither whitespace nor in a `//` comment.
static size_t skipTrivia(StringRef text, size_t pos) {
  while (pos < text.size()) {
    char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++pos;
    } else if (text.substr(pos).starts_with("//")) {
      pos = text.find('\n', pos);
      if (pos == StringRef::npos)
        return text.size();
    } else {
      break;
    }
  }
  return pos;
}

/// True when `text` starts with the keyword `word` (not a longer name).
static bool startsWithKeyword(StringRef text, StringRef word) {
  return text.starts_with(word) &&
         (text.size() == word.size() || !isBareIdChar(text[word.size()]));
}

/// The name of the type alias `text` starts with (`!name`, without `!`).
static StringRef getAliasName(StringRef text) {
  if (!text.consume_front("!"))
    return {};
  size_t end = 0;
  while (end < text.size() && isBareIdChar(text[end]))
    ++end;
  return text.take_front(end);
}

/// True when the type alias `!name` is defined (`!name = ...` at the start
/// of a line of `text`) as `index`, directly or through other aliases.
static bool isIndexAlias(StringRef text, StringRef name, unsigned hops = 0) {
  if (name.empty() || hops > 16)
    return false;
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (StringRef line : lines) {
    line = line.ltrim();
    if (!line.consume_front("!") || !line.consume_front(name) ||
        (!line.empty() && isBareIdChar(line.front())))
      continue;
    line = line.ltrim();
    if (!line.consume_front("="))
      continue;
    line = line.ltrim();
    if (startsWithKeyword(line, "index"))
      return true;
    if (line.starts_with("!"))
      return isIndexAlias(text, getAliasName(line), hops + 1);
  }
  return false;
}

std::optional<dist::ParserHazard> dist::findParserHazard(StringRef text) {
  if (text.starts_with("ML\xEFR"))
    return std::nullopt; // Bytecode.
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    switch (text[i]) {
    case '"': // A string literal (one line), escapes included.
      for (++i; i < e && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (i + 1 < e && text[i + 1] == '/') {
        i = text.find('\n', i);
        if (i == StringRef::npos)
          return std::nullopt;
      }
      break;
    case '[':
    case '{':
    case '(':
    case '<':
      if (++depth > kMaxSourceNesting)
        return ParserHazard{
            i, "brackets nested deeper than " +
                   std::to_string(kMaxSourceNesting) +
                   " levels are not supported (MLIR's parser would "
                   "overflow its stack)"};
      break;
    case '>':
      if (i > 0 && text[i - 1] == '-')
        break; // `->`
      [[fallthrough]];
    case ']':
    case '}':
    case ')':
      if (depth)
        --depth;
      break;
    case 'a': {
      if ((i > 0 && isBareIdChar(text[i - 1])) ||
          !startsWithKeyword(text.substr(i), "array"))
        break;
      size_t open = skipTrivia(text, i + 5);
      if (open >= e || text[open] != '<')
        break;
      StringRef element = text.substr(skipTrivia(text, open + 1));
      if (startsWithKeyword(element, "index") ||
          (element.starts_with("!") &&
           isIndexAlias(text, getAliasName(element))))
        return ParserHazard{i, "'array<index ...>' is not supported: a dense "
                               "array's elements are integers or floats "
                               "(MLIR 22's parser crashes on 'index')"};
      break;
    }
    default:
      break;
    }
  }
  return std::nullopt;
}

OwningOpRef<ModuleOp> dist::parseUserSource(llvm::SourceMgr &sourceMgr,
                                            const ParserConfig &config) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  if (std::optional<ParserHazard> hazard =
          findParserHazard(buffer->getBuffer())) {
    auto [line, column] = sourceMgr.getLineAndColumn(
        llvm::SMLoc::getFromPointer(buffer->getBufferStart() + hazard->offset));
    emitError(FileLineColLoc::get(config.getContext(),
                                  buffer->getBufferIdentifier(), line, column))
        << hazard->message;
    return nullptr;
  }
  return parseSourceFile<ModuleOp>(sourceMgr, config);
}

OwningOpRef<ModuleOp> dist::parseUserSource(llvm::SourceMgr &sourceMgr,
                                            MLIRContext *context) {
  return parseUserSource(sourceMgr, ParserConfig(context));
}
