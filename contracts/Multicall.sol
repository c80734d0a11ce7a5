// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title Multicall
/// @notice Batches read calls into one `eth_call`. Implements only `aggregate3`, with the
/// same ABI as the widely deployed Multicall3, so viem's `multicall` can use it when its
/// address is configured. Chains that already have Multicall3 need no deployment; readers
/// without either use viem's deployless mode.
contract Multicall {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    error CallFailed(uint256 index);

    function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory results) {
        results = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; ++i) {
            (bool success, bytes memory returnData) = calls[i].target.call(calls[i].callData);
            if (!success && !calls[i].allowFailure) revert CallFailed(i);
            results[i] = Result({success: success, returnData: returnData});
        }
    }
}
