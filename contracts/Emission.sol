// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {Ownable} from "./Ownable.sol";

/// @title Emission
/// @notice The ledger of the network's reward schedule.
///
/// Time is cut into epochs of `epochLength` seconds from `genesisTime`; before genesis the
/// current epoch is 0. The reward of epoch `e` is `initialReward >> (e / halvingInterval)`:
/// it halves every `halvingInterval` epochs. The minter emits the reward of every finished
/// epoch exactly once, in order, and never beyond `cap`: the epoch that reaches the cap emits
/// only what is left, later ones emit 0.
///
/// The contract holds no funds and mints no token: `EpochEmitted` records what the recipient
/// (a reward distributor) is owed, and `totalEmitted` is the running sum.
contract Emission is Ownable {
    uint256 public immutable genesisTime;
    uint256 public immutable epochLength;
    uint256 public immutable initialReward;
    uint256 public immutable halvingInterval;
    uint256 public immutable cap;

    uint256 public totalEmitted;
    /// @notice Epochs `0 .. emittedEpochs - 1` have been emitted; the next one is this number.
    uint256 public emittedEpochs;
    address public minter;

    event MinterChanged(address indexed previous, address indexed current);
    event EpochEmitted(uint256 indexed epoch, address indexed recipient, uint256 amount);

    error InvalidSchedule(string what);
    error NotMinter(address caller);
    error NoFinishedEpoch(uint256 nextEpoch, uint256 currentEpoch);

    constructor(
        address initialOwner,
        uint256 genesisTime_,
        uint256 epochLength_,
        uint256 initialReward_,
        uint256 halvingInterval_,
        uint256 cap_
    ) Ownable(initialOwner) {
        if (epochLength_ == 0) revert InvalidSchedule("epochLength is 0");
        if (halvingInterval_ == 0) revert InvalidSchedule("halvingInterval is 0");
        genesisTime = genesisTime_;
        epochLength = epochLength_;
        initialReward = initialReward_;
        halvingInterval = halvingInterval_;
        cap = cap_;
        minter = initialOwner;
        emit MinterChanged(address(0), initialOwner);
    }

    modifier onlyMinter() {
        if (msg.sender != minter) revert NotMinter(msg.sender);
        _;
    }

    function setMinter(address newMinter) external onlyOwner {
        if (newMinter == address(0)) revert ZeroAddress();
        emit MinterChanged(minter, newMinter);
        minter = newMinter;
    }

    /// @notice The epoch that contains the current block's timestamp (0 before genesis).
    function currentEpoch() public view returns (uint256) {
        if (block.timestamp < genesisTime) return 0;
        return (block.timestamp - genesisTime) / epochLength;
    }

    /// @notice The scheduled reward of `epoch`, before the cap is applied.
    function epochReward(uint256 epoch) public view returns (uint256) {
        uint256 halvings = epoch / halvingInterval;
        if (halvings >= 256) return 0;
        return initialReward >> halvings;
    }

    /// @notice The scheduled reward of the current epoch, before the cap is applied.
    function currentEpochReward() external view returns (uint256) {
        return epochReward(currentEpoch());
    }

    /// @notice Emits the finished epochs not yet emitted, at most `maxEpochs` of them, in
    /// order, crediting `recipient`. Returns the amount emitted.
    function emitFinishedEpochs(address recipient, uint256 maxEpochs)
        external
        onlyMinter
        returns (uint256 emitted)
    {
        if (recipient == address(0)) revert ZeroAddress();
        uint256 next = emittedEpochs;
        uint256 current = currentEpoch();
        bool started = block.timestamp >= genesisTime;
        // Epochs before `current` are finished; none is finished before genesis.
        if (!started || next >= current || maxEpochs == 0) revert NoFinishedEpoch(next, current);
        uint256 end = current - next > maxEpochs ? next + maxEpochs : current;
        uint256 total = totalEmitted;
        for (uint256 epoch = next; epoch < end; ++epoch) {
            uint256 amount = epochReward(epoch);
            uint256 room = cap - total;
            if (amount > room) amount = room;
            total += amount;
            emitted += amount;
            emit EpochEmitted(epoch, recipient, amount);
        }
        totalEmitted = total;
        emittedEpochs = end;
    }
}
