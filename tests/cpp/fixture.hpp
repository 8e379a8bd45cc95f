#pragma once
// Test fixtures: real PTX, SASS and CUDA sources kept as files under tests/cpp/fixtures/ (what each
// one is, and how it was made, is in fixtures/README.md) instead of string literals in the tests.
//
// XCUDA_TEST_FIXTURES is that folder's absolute path, set by CMake for xcuda_core_tests only.
// fixture() returns a file's bytes unchanged. A fixture that cannot be read throws
// std::runtime_error naming the path; called from a test body, GoogleTest reports that test as
// failed with the message, and the other tests still run.

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#ifndef XCUDA_TEST_FIXTURES
#error "XCUDA_TEST_FIXTURES is not defined: CMakeLists.txt sets it for xcuda_core_tests"
#endif

namespace xcuda_tests
{
    inline std::string fixture(const char* name)
    {
        const std::string path = std::string(XCUDA_TEST_FIXTURES) + "/" + name;
        std::ifstream in(path, std::ios::binary);
        if (!in)
        {
            throw std::runtime_error("test fixture " + path
                                     + " cannot be opened: is it missing from tests/cpp/fixtures?");
        }
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (in.bad())
        {
            throw std::runtime_error("test fixture " + path + " cannot be read");
        }
        return text;
    }
}
