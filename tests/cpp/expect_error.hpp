#pragma once
// The message of the exception of type Error that f() throws, or "(nothing thrown)": for tests that
// check what an error says (a wrong type thrown escapes and fails the test).

#include <string>

namespace xcuda_tests
{
    template <class Error, class F>
    std::string message_of(F f)
    {
        try
        {
            f();
        }
        catch (const Error& e)
        {
            return e.what();
        }
        return "(nothing thrown)";
    }
}
