#pragma once
// Errors a user causes (bad file, bad flag, impossible plan). Their message is shown as is,
// so it names the file, field or value at fault and, where it helps, what to do.
#include <stdexcept>
#include <string>

namespace hippie {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The first line of a message (LibTorch's errors go on with a C++ backtrace).
inline std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace hippie
